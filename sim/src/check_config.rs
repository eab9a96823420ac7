//! `k3s check-config`: real k3s runs contrib/util/check-config.sh against the host kernel's
//! config. The stand-in reads no kernel: it prints a real output of the script, kept under
//! tests/fixtures/check-config/ with its source, so `repro doctor`'s parser meets k3s's format
//! offline. `REPRO_SIM_CHECK_CONFIG=fail` picks an output where a generally necessary option is
//! missing (and exits 1, as the script exits with its failure count); anything else, or unset,
//! a passing one.

/// The variable choosing the output.
pub const ENV: &str = "REPRO_SIM_CHECK_CONFIG";

const PASS: &str = include_str!("../../tests/fixtures/check-config/k3s-11916-v1.32.3-pass.txt");
const FAIL: &str = include_str!("../../tests/fixtures/check-config/k3s-4859-libreelec-fail.txt");

/// Prints the chosen output; the exit code is the script's.
pub fn run() -> i32 {
    let (text, code) = pick(std::env::var(ENV).ok().as_deref());
    print!("{text}");
    code
}

fn pick(choice: Option<&str>) -> (&'static str, i32) {
    match choice {
        Some("fail") => (FAIL, 1),
        _ => (PASS, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_is_chosen_by_the_variable_and_ends_failing() {
        let (text, code) = pick(Some("fail"));
        assert_eq!(code, 1);
        assert!(text.contains("CONFIG_NETFILTER_XT_MATCH_IPVS: missing (fail)"));
        assert!(text.trim_end().ends_with("STATUS: 1 (fail)"));
        let (text, code) = pick(None);
        assert_eq!(code, 0);
        assert!(text.trim_end().ends_with("STATUS: pass"));
    }
}
