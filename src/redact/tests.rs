//! Redaction rules, one planted secret at a time, plus the properties every rule must keep:
//! nothing planted survives, keys stay, placeholders are stable, non-secrets are untouched.

use serde_json::json;

use super::*;

fn red(text: &str) -> String {
    Redactor::new(&[]).redact_text(text)
}

/// Asserts `secret` is gone from `out` and `kept` is still there.
#[track_caller]
fn gone(out: &str, secret: &str, kept: &str) {
    assert!(
        !out.contains(secret),
        "secret {secret:?} survived in:\n{out}"
    );
    assert!(out.contains(kept), "{kept:?} missing from:\n{out}");
}

#[test]
fn yaml_token_keys_keep_the_key() {
    let out = red("token: s3cr3t-config-token\nagent-token: \"agent-pass-123\"\nserver: https://etcd-1:6443\n");
    gone(&out, "s3cr3t-config-token", "token: <REDACTED-1>");
    gone(&out, "agent-pass-123", "agent-token: \"<REDACTED-2>\"");
    assert!(out.contains("server: https://etcd-1:6443"), "{out}");
}

#[test]
fn yaml_password_and_secret_keys_match_anywhere_in_the_key() {
    let out = red("etcd-s3-secret-key: AKIAsecretvalue\ndb_password: 'hunter22'\nmyPassword: pw-in-camel # comment\n");
    gone(&out, "AKIAsecretvalue", "etcd-s3-secret-key: <REDACTED-1>");
    gone(&out, "hunter22", "db_password: '<REDACTED-2>'");
    gone(&out, "pw-in-camel", "myPassword: <REDACTED-3> # comment");
}

#[test]
fn yaml_value_with_spaces_is_redacted_whole() {
    let out = red("password: correct horse battery staple\n");
    gone(&out, "horse", "password: <REDACTED-1>");
    // The words are not learned one by one: "correct" elsewhere is not a secret.
    let mut r = Redactor::new(&[]);
    let out = r.redact_text("password: correct horse battery staple\nthe correct answer\n");
    assert!(out.contains("the correct answer"), "{out}");
}

#[test]
fn yaml_block_and_list_values_under_a_secret_key() {
    let out = red("token: |\n  multi-line-secret-1\n  multi-line-secret-2\nother: keep-me\npasswords:\n  - list-secret-a\n  - list-secret-b\nnext: 1\n");
    for s in [
        "multi-line-secret-1",
        "multi-line-secret-2",
        "list-secret-a",
        "list-secret-b",
    ] {
        assert!(!out.contains(s), "{s} survived:\n{out}");
    }
    assert!(
        out.contains("other: keep-me") && out.contains("next: 1") && out.contains("token: |"),
        "{out}"
    );
}

/// Text that only looks as if it held a secret comes out as it went in.
#[test]
fn lookalikes_are_not_secrets() {
    for (what, text) in [
        (
            "booleans, null and empty values",
            "secrets-encryption: true\ndisable-token-auth: false\ntoken: true\npassword: null\nagent-token: \"\"\nsecret: ~\n",
        ),
        (
            "punctuation after a key",
            "the fixture plants a token in `K3S_TOKEN=`: see below; password=\"\" and token=...\n",
        ),
        (
            "file, path and dir keys: locations",
            "--token-auth-file=/var/lib/rancher/k3s/server/cred/passwd --tls-private-key-file=/x/serving.key\ntoken-file: /etc/k3s/token\nK3S_TOKEN_FILE=/run/secrets/token\n",
        ),
        (
            "secrets-encryption-provider",
            "secrets-encryption-provider: aescbc\n",
        ),
    ] {
        assert_eq!(red(text), text, "{what}");
    }
}

#[test]
fn env_entries_and_query_params() {
    let out = red("K3S_TOKEN=9c1f2e7a4b8d3f60 FOO_PASSWORD=pa55word GET /v1-k3s/config?token=querysecret99&x=1");
    gone(&out, "9c1f2e7a4b8d3f60", "K3S_TOKEN=<REDACTED-1>");
    gone(&out, "pa55word", "FOO_PASSWORD=<REDACTED-2>");
    gone(&out, "querysecret99", "?token=<REDACTED-3>&x=1");
}

#[test]
fn command_line_flags_both_forms() {
    let out = red(
        "k3s server --token flagsecret1 --agent-token=flagsecret2 --disable-etcd --node-name n1",
    );
    gone(&out, "flagsecret1", "--token <REDACTED-1>");
    gone(&out, "flagsecret2", "--agent-token=<REDACTED-2>");
    assert!(out.contains("--disable-etcd --node-name n1"), "{out}");
}

#[test]
fn k3s_join_tokens_anywhere_and_their_password_part() {
    let token = "K10d1f0e8c2b4a6978563412f0e1d2c3b4a5968778695a4b3c2d1e0f9a8b7c6d5e4::server:4f9d2c7e1a8b3f60";
    let text = format!(
        "level=info msg=\"joining with {token}\"\nlater the password 4f9d2c7e1a8b3f60 alone\n"
    );
    let out = red(&text);
    gone(&out, "4f9d2c7e1a8b3f60", "joining with <REDACTED-1>");
    assert!(!out.contains("K10d1f0e8"), "{out}");
    assert!(out.contains("the password <REDACTED-2> alone"), "{out}");
}

#[test]
fn bootstrap_token_form() {
    let out = red("token K10abcdef0123456789::abcdef.0123456789abcdef used");
    gone(&out, "0123456789abcdef used", "used");
    assert!(!out.contains("abcdef.0123456789abcdef"), "{out}");
}

#[test]
fn authorization_headers_and_bearer_tokens() {
    let out = red("Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.payload.sig\nauthorization=Basic dXNlcjpwYXNz\ncurl -H \"Authorization: Bearer tok-in-curl-123\" https://x\nsent bearer abcdefgh12345678 upstream");
    gone(
        &out,
        "eyJhbGciOiJSUzI1NiJ9.payload.sig",
        "Authorization: Bearer <REDACTED-1>",
    );
    gone(&out, "dXNlcjpwYXNz", "authorization=Basic <REDACTED-2>");
    gone(
        &out,
        "tok-in-curl-123",
        "Authorization: Bearer <REDACTED-3>",
    );
    gone(&out, "abcdefgh12345678", "bearer <REDACTED-4>");
}

#[test]
fn credentials_in_urls() {
    let out = red("datastore-endpoint: postgres://k3s:dbpassw0rd@db:5432/k3s\n");
    gone(
        &out,
        "dbpassw0rd",
        "postgres://k3s:<REDACTED-1>@db:5432/k3s",
    );
}

#[test]
fn json_style_and_logrus_quoted_values() {
    let out = red(
        r#"{"token": "jsonsecret1", "name": "x"} level=info msg="ok" password="logrus secret" msg="join token=\"escsecret9\" done""#,
    );
    gone(&out, "jsonsecret1", r#""token": "<REDACTED-1>""#);
    gone(&out, "logrus secret", r#"password="<REDACTED-2>""#);
    gone(&out, "escsecret9", r#"token=\"<REDACTED-3>\" done"#);
    assert!(out.contains(r#""name": "x""#), "{out}");
}

#[test]
fn known_secrets_are_replaced_bare_and_numbered_first() {
    let mut r = Redactor::new(&["runtoken0123".to_string()]);
    let out = r.redact_text("password: other-secret\nthe token runtoken0123 appears bare\n");
    gone(&out, "runtoken0123", "the token <REDACTED-1> appears bare");
    gone(&out, "other-secret", "password: <REDACTED-2>");
}

#[test]
fn explicit_short_secrets_still_go_learned_short_ones_only_under_keys() {
    let mut r = Redactor::new(&["xy".to_string()]);
    assert_eq!(r.redact_text("a xy b"), "a <REDACTED-1> b");
    // A learned two-letter password is hidden where it is keyed, not in every word.
    let out = red("password: ab\nabout tables\n");
    assert!(
        out.contains("password: <REDACTED-1>") && out.contains("about tables"),
        "{out}"
    );
}

#[test]
fn placeholders_are_stable_across_texts_in_one_context() {
    let mut r = Redactor::new(&[]);
    r.learn_text("K3S_TOKEN=stable-secret-42");
    let a = r.redact_text("log line mentions stable-secret-42");
    let b = r.redact_text("token: stable-secret-42\n");
    let c = r.redact_text("another=thing K3S_AGENT_TOKEN=second-secret-7 and stable-secret-42");
    assert_eq!(a, "log line mentions <REDACTED-1>");
    assert_eq!(b, "token: <REDACTED-1>\n");
    assert_eq!(
        c,
        "another=thing K3S_AGENT_TOKEN=<REDACTED-2> and <REDACTED-1>"
    );
    assert_eq!(
        r.placeholder_of("stable-secret-42").as_deref(),
        Some("<REDACTED-1>")
    );
}

#[test]
fn learning_first_catches_a_bare_secret_seen_before_its_key() {
    let mut r = Redactor::new(&[]);
    let files = [
        "boot log: using fedcba9876543210 as token",
        "K3S_TOKEN=fedcba9876543210",
    ];
    for f in files {
        r.learn_text(f);
    }
    let out: Vec<String> = files.iter().map(|f| r.redact_text(f)).collect();
    assert_eq!(out[0], "boot log: using <REDACTED-1> as token");
    assert_eq!(out[1], "K3S_TOKEN=<REDACTED-1>");
}

#[test]
fn redaction_is_idempotent() {
    let text =
        "token: abc-secret-1\nK3S_TOKEN=abc-secret-1\nAuthorization: Bearer abcdefghijk123\n";
    let once = red(text);
    assert_eq!(red(&once), once);
}

#[test]
fn a_secret_inside_a_placeholder_name_does_not_corrupt_placeholders() {
    let mut r = Redactor::new(&["REDACTED".to_string()]);
    let out = r.redact_text("token: zzz-secret\nREDACTED word");
    assert!(out.contains("token: <REDACTED-2>"), "{out}");
    assert!(out.contains("<REDACTED-1> word"), "{out}");
}

#[test]
fn plain_k3s_logs_and_configs_are_untouched() {
    let text = concat!(
        "time=\"2026-11-30T09:00:01Z\" level=info msg=\"Starting distributed registry mirror at https://10.42.0.2:6443/v2 for registries [docker.io]\"\n",
        "time=\"2026-11-30T09:00:02Z\" level=info msg=\"Running kubelet --anonymous-auth=false --authentication-token-webhook=true --tls-private-key-file=/var/lib/rancher/k3s/agent/serving-kubelet.key\"\n",
        "# config.yaml for etcd-2 (role etcd), rendered by repro at step 1\nserver: \"https://etcd-1:6443\"\ndisable-apiserver: true\nembedded-registry: true\n",
        "2026-11-30T09:00:01.123Z time=\"2026-11-30T09:00:01Z\" level=warning msg=\"critical configuration mismatched: supervisor-metrics\"\n",
    );
    assert_eq!(red(text), text);
}

#[test]
fn json_env_cmd_and_keys() {
    let doc = json!([{
        "Config": {
            "Env": ["K3S_TOKEN=envsecret123", "FOO_PASSWORD=pw,with,commas", "PATH=/usr/bin:/bin"],
            "Cmd": ["server", "--token", "cmdsecret456", "--disable-etcd"],
            "Labels": {"io.repro.run": "a1b2c3d4"}
        },
        "Secret": "topsecret789",
        "ClientToken": "clienttok000",
        "secrets-encryption": true,
        "Note": "mentions envsecret123 in passing"
    }]);
    let mut r = Redactor::new(&[]);
    let out = r.redact_json(&doc);
    let s = serde_json::to_string(&out).unwrap_or_default();
    for secret in [
        "envsecret123",
        "pw,with,commas",
        "cmdsecret456",
        "topsecret789",
        "clienttok000",
    ] {
        assert!(!s.contains(secret), "{secret} survived: {s}");
    }
    assert_eq!(out[0]["Config"]["Env"][0], "K3S_TOKEN=<REDACTED-1>");
    assert_eq!(out[0]["Config"]["Cmd"][1], "--token");
    assert_eq!(out[0]["Config"]["Cmd"][3], "--disable-etcd");
    assert_eq!(out[0]["Config"]["Env"][2], "PATH=/usr/bin:/bin");
    assert_eq!(out[0]["Config"]["Labels"]["io.repro.run"], "a1b2c3d4");
    assert_eq!(out[0]["secrets-encryption"], true);
    assert_eq!(out[0]["Note"], "mentions <REDACTED-1> in passing");
}

#[test]
fn redact_file_reads_json_by_name_and_falls_back_to_text() {
    let mut r = Redactor::new(&[]);
    let out = r.redact_file("inspect.json", r#"{"Env":["K3S_TOKEN=abcdef123456"]}"#);
    assert!(
        out.contains("K3S_TOKEN=<REDACTED-1>") && out.ends_with('\n'),
        "{out}"
    );
    let out = r.redact_file("broken.json", "{ not json K3S_TOKEN=abcdef123456");
    assert_eq!(out, "{ not json K3S_TOKEN=<REDACTED-1>");
}

#[test]
fn secret_key_rules() {
    for k in [
        "token",
        "agent-token",
        "K3S_TOKEN",
        "--token",
        "etcd-s3-secret-key",
        "FOO_PASSWORD",
        "passwd",
        "accessToken",
        "etcd-s3-access-key",
        "api_key",
    ] {
        assert!(is_secret_key(k), "{k} should be a secret key");
    }
    for k in [
        "token-file",
        "K3S_TOKEN_FILE",
        "secrets-encryption",
        "secrets-encryption-provider",
        "disable-token-auth",
        "authentication-token-webhook",
        "tls-private-key-file",
        "server",
        "node-name",
    ] {
        assert!(!is_secret_key(k), "{k} should not be a secret key");
    }
}

/// Every rule at once on one text: whatever is planted must be gone, in any order of files.
#[test]
fn planted_secrets_never_survive_a_mixed_text() {
    let planted = [
        "pl-tok-0001",
        "pl-agent-0002",
        "pl-pass-0003",
        "pl-sec-0004",
        "pl-env-0005",
        "pl-flag-0006",
        "pl-flag-0007",
        "pl-url-0008",
        "pl-bearer-000009",
        "pl-query-0010",
        "pl-json-0011",
    ];
    let text = format!(
        "token: {}\nagent-token: '{}'\nadmin-password: {}\nclient_secret: \"{}\"\nK3S_TOKEN={} \nk3s server --token {} --agent-token={}\nendpoint: mysql://root:{}@tcp(db:3306)/k3s\nAuthorization: Bearer {}\nGET /x?token={}\n{{\"password\": \"{}\"}}\n",
        planted[0], planted[1], planted[2], planted[3], planted[4], planted[5], planted[6], planted[7], planted[8], planted[9], planted[10]
    );
    let out = red(&text);
    for p in planted {
        assert!(!out.contains(p), "{p} survived:\n{out}");
    }
    for key in [
        "token: ",
        "agent-token: ",
        "admin-password: ",
        "client_secret: ",
        "K3S_TOKEN=",
        "--token ",
        "--agent-token=",
        "Authorization: Bearer ",
        "?token=",
        "\"password\": ",
    ] {
        assert!(out.contains(key), "key {key:?} lost:\n{out}");
    }
}

/// A day of k3s logs: the bundle redacts every boot's log whole.
#[test]
fn large_logs_redact_whole() {
    // Correctness on a large log (a late secret after 5,000 long lines is still found). How fast
    // this goes is a benchmark's business, not a test's.
    let line = "2026-11-30T09:00:20.191621352Z time=\"2026-11-30T09:00:20Z\" level=info msg=\"Running kubelet --address=0.0.0.0 --anonymous-auth=false --authentication-token-webhook=true --node-ip=172.28.0.2 --tls-private-key-file=/var/lib/rancher/k3s/agent/serving-kubelet.key\"\n";
    let mut text = line.repeat(5_000);
    text.push_str("K3S_TOKEN=late-secret-123\n");
    let out = Redactor::new(&["runtoken-abc".to_string()]).redact_text(&text);
    assert!(out.ends_with("K3S_TOKEN=<REDACTED-2>\n"));
    assert!(!out.contains("late-secret-123"));
}

// Issue 14: shapes the first rules missed.

const PEM_BODY: [&str; 3] = [
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7pemLine1",
    "pemLine2xQm9JbXZnN2dSa0tUZlRQcWd3b3RmUmJ3TUxwR1dxYUZwVg",
    "pemLine3Zk5dWQ==",
];

#[test]
fn pem_private_keys_plain_in_yaml_block_and_in_json() {
    let plain = format!(
        "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----\n",
        PEM_BODY.join("\n")
    );
    let yaml = format!(
        "tls:\n  key: |\n    -----BEGIN PRIVATE KEY-----\n    {}\n    -----END PRIVATE KEY-----\nserver: https://x:6443\n",
        PEM_BODY.join("\n    ")
    );
    let json = format!(
        "{{\"content\": \"-----BEGIN EC PRIVATE KEY-----\\n{}\\n-----END EC PRIVATE KEY-----\\n\"}}",
        PEM_BODY.join("\\n")
    );
    for text in [&plain, &yaml, &json] {
        let out = red(text);
        for line in PEM_BODY {
            assert!(!out.contains(line), "{line} survived:\n{out}");
        }
        assert!(out.contains("PRIVATE KEY-----"), "markers lost:\n{out}");
    }
    // One line of the key printed alone elsewhere is the key too.
    let mut r = Redactor::new(&[]);
    r.learn_text(&plain);
    let out = r.redact_text(&format!("a log prints {} alone", PEM_BODY[1]));
    assert_eq!(out, "a log prints <REDACTED-1> alone");
    // A certificate is public: it stays.
    let cert = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIRAKx\n-----END CERTIFICATE-----\n";
    assert_eq!(red(cert), cert);
}

#[test]
fn registries_yaml_auth_block_and_docker_config_auths() {
    let reg = "mirrors:\n  docker.io: {}\nconfigs:\n  \"reg.example:5000\":\n    auth:\n      username: reg-user-0001\n      password: reg-pass-0002\n      auth: cmVnLWF1dGgtMDAwMw==\n      identitytoken: reg-idtok-0004\n    tls:\n      insecure_skip_verify: true\n";
    let out = red(reg);
    for s in [
        "reg-user-0001",
        "reg-pass-0002",
        "cmVnLWF1dGgtMDAwMw==",
        "reg-idtok-0004",
    ] {
        assert!(!out.contains(s), "{s} survived:\n{out}");
    }
    for kept in [
        "username: <REDACTED-",
        "password: <REDACTED-",
        "identitytoken: <REDACTED-",
        "insecure_skip_verify: true",
        "docker.io: {}",
    ] {
        assert!(out.contains(kept), "{kept} lost:\n{out}");
    }
    // The password is learned alone, so it is replaced bare elsewhere.
    let mut r = Redactor::new(&[]);
    r.learn_text(reg);
    assert_eq!(r.redact_text("login reg-pass-0002"), "login <REDACTED-2>");

    let docker = r#"{"auths": {"https://index.docker.io/v1/": {"auth": "ZG9ja2VyOmh1YjAwMDU=", "identitytoken": "dock-idtok-0006"}}, "credsStore": "pass"}"#;
    let v: Value = serde_json::from_str(docker).unwrap_or_default();
    let out = serde_json::to_string(&Redactor::new(&[]).redact_json(&v)).unwrap_or_default();
    assert!(
        !out.contains("ZG9ja2VyOmh1YjAwMDU=") && !out.contains("dock-idtok-0006"),
        "{out}"
    );
    assert!(
        out.contains("\"auths\"") && out.contains("\"auth\":\"<REDACTED-"),
        "{out}"
    );
    let out = red(docker);
    assert!(
        !out.contains("ZG9ja2VyOmh1YjAwMDU=") && !out.contains("dock-idtok-0006"),
        "{out}"
    );
}

#[test]
fn kubeconfig_client_key_data_and_token() {
    let kc = "users:\n- name: default\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJU\n    client-key-data: LS0tLS1CRUdJTiBFQyBQUklWQVRFIGtleTAwMDc=\n- name: sa\n  user:\n    token: kube-sa-token-0008\n";
    let out = red(kc);
    gone(
        &out,
        "LS0tLS1CRUdJTiBFQyBQUklWQVRFIGtleTAwMDc=",
        "client-key-data: <REDACTED-",
    );
    gone(&out, "kube-sa-token-0008", "token: <REDACTED-");
    // A certificate is public.
    assert!(
        out.contains("client-certificate-data: LS0tLS1CRUdJTiBDRVJU"),
        "{out}"
    );
}

#[test]
fn passphrase_and_jwts() {
    let jwt = "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJzdWIiOiJzeXN0ZW06c2EiLCJleHAiOjF9.c2lnbmF0dXJlLTAwMDk";
    let out = red(&format!(
        "ssh-key-passphrase: pass-phrase-0010\nlevel=info msg=\"got {jwt} from the apiserver\"\n"
    ));
    gone(&out, "pass-phrase-0010", "ssh-key-passphrase: <REDACTED-1>");
    gone(&out, jwt, "got <REDACTED-2> from");
    // A single `eyJ…` base64 word is not a JWT.
    let text = "value eyJhbGciOiJIUzI1NiJ9 alone\n";
    assert_eq!(red(text), text);
}

#[test]
fn url_password_holding_an_at_sign() {
    let out =
        red("DOCKER_HOST=tcp://user:pa@ss-0011@dockerd:2376 and postgres://k3s:p@w@db:5432/k3s\n");
    gone(&out, "pa@ss-0011", "tcp://user:<REDACTED-1>@dockerd:2376");
    gone(&out, "ss-0011", "postgres://k3s:<REDACTED-2>@db:5432/k3s");
    assert!(!out.contains("p@w"), "{out}");
}

#[test]
fn env_names_outside_the_first_rules() {
    let out = red("DB_PASS=env-0012 SESSION_KEY=env-0013 CREDS=env-0014 pwd=env-0015 APP_SECRET=env-0016 LDAP_PASSWD=env-0017 API_KEY=env-0018 ADMIN_PWD=env-0019\n");
    for n in 12..=19 {
        let s = format!("env-00{n}");
        assert!(!out.contains(&s), "{s} survived:\n{out}");
    }
    for k in [
        "DB_PASS=<",
        "SESSION_KEY=<",
        "CREDS=<",
        "pwd=<",
        "APP_SECRET=<",
        "LDAP_PASSWD=<",
        "API_KEY=<",
    ] {
        assert!(out.contains(k), "{k} lost:\n{out}");
    }
    // A shell's working directory, keys named after files, and plain settings stay.
    let text = "PWD=/root OLDPWD=/ SESSION_KEY_FILE=/run/s.key node-name: keypass\nsecrets-encryption: true\nPATH=/usr/bin\n";
    assert_eq!(red(text), text);
    for k in [
        "DB_PASS",
        "SESSION_KEY",
        "CREDS",
        "pwd",
        "X_SECRET",
        "X_PASSWD",
        "API_KEY",
        "passphrase",
        "client-key-data",
        "auth",
        "username",
    ] {
        assert!(is_secret_key(k), "{k} should be a secret key");
    }
    for k in [
        "keypass-file",
        "auths",
        "anonymous-auth",
        "compass",
        "password-file",
    ] {
        assert!(!is_secret_key(k), "{k} should not be a secret key");
    }
}

#[test]
fn the_run_token_in_derived_forms() {
    use base64::Engine as _;
    let token = "4f9d2c7e1a8b3f60aa11bb22cc33dd44ee55ff6677889900";
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut r = Redactor::new(&[token.to_string()]);
    let forms = [
        token.to_uppercase(),
        b64.encode(token),
        b64.encode(format!("{token}\n")),
        b64.encode(format!("K3S_TOKEN={token}")),
        b64.encode(format!("x{token}")),
        base64::engine::general_purpose::URL_SAFE.encode(format!("ab{token}")),
    ];
    for f in &forms {
        let out = r.redact_text(&format!("printed {f} here\n"));
        assert!(out.contains("<REDACTED-1>"), "{f} not redacted: {out}");
        // What is left of the encoding is at most its first and last group (and the
        // encoding of what came before the token, `K3S_TOKEN=`).
        let left = out
            .trim_start_matches("printed ")
            .trim_end_matches(" here\n");
        let left = left.replace("<REDACTED-1>", "");
        assert!(left.len() <= 8 + 16, "{f}: too much left: {out}");
    }
    // Derived forms share the secret's number and are not counted as secrets of their own.
    assert_eq!(r.secret_count(), 1);
}

#[test]
fn the_run_token_split_across_two_log_lines() {
    let token = "4f9d2c7e1a8b3f60aa11bb22cc33dd44ee55ff6677889900";
    let (a, b) = token.split_at(20);
    let log = format!(
        "2026-11-30T09:00:01.000000001Z level=info msg=\"token is {a}\n2026-11-30T09:00:01.000000002Z {b} and more\"\nnext line\n"
    );
    let out = Redactor::new(&[token.to_string()]).redact_text(&log);
    assert!(!out.contains(a) && !out.contains(b), "{out}");
    assert!(
        out.contains("token is <REDACTED-1>\n2026-11-30T09:00:01.000000002Z <REDACTED-1> and more"),
        "{out}"
    );
    // Without a timestamp too; and a line merely ending like the token's start stays.
    let out = Redactor::new(&[token.to_string()]).redact_text(&format!("x {a}\n{b} y\n"));
    assert_eq!(out, "x <REDACTED-1>\n<REDACTED-1> y\n");
    let text = format!("x {a}\nsomething else\n");
    assert_eq!(Redactor::new(&[token.to_string()]).redact_text(&text), text);
}

#[test]
fn new_numbers_start_after_placeholders_already_there() {
    let old = "token: <REDACTED-1>\npassword: <REDACTED-4>\n";
    let mut r = Redactor::after_placeholders(&["given-secret-1".to_string()], [old]);
    assert_eq!(r.redact_text("given-secret-1"), "<REDACTED-5>");
    assert_eq!(
        r.redact_text("api-key: new-key-77"),
        "api-key: <REDACTED-6>"
    );
    assert_eq!(r.redact_text(old), old);
}

#[test]
fn bytes_are_redacted_in_place_and_the_rest_kept() {
    let mut r = Redactor::new(&["explicit-secret-bytes".to_string()]);
    r.learn_text("K3S_TOKEN=learned-in-text-01");
    let mut data = vec![0xff, 0xfe, 0x00];
    data.extend_from_slice(
        b"a explicit-secret-bytes b learned-in-text-01 c password=in-bytes-02\n",
    );
    data.extend_from_slice(&[0xc3, 0x28, 0x80]);
    let out = r.redact_bytes(&data);
    assert!(out.starts_with(&[0xff, 0xfe, 0x00]) && out.ends_with(&[0xc3, 0x28, 0x80]));
    let text = String::from_utf8_lossy(&out);
    for s in ["explicit-secret-bytes", "learned-in-text-01", "in-bytes-02"] {
        assert!(!text.contains(s), "{s} survived: {text}");
    }
    assert!(
        text.contains("a <REDACTED-1> b <REDACTED-2> c password=<REDACTED-3>"),
        "{text}"
    );
}

/// `repro redact` on a bundle: a member that is not UTF-8 is redacted as bytes and named, never
/// copied as it was.
#[test]
fn a_binary_bundle_member_is_redacted_and_named() {
    use crate::archive as bundle;
    let tmp = tempfile::tempdir().expect("tmp");
    let mut bin = b"\xff\xfe garbage K3S_TOKEN=bin-member-secret-3 \x00\x01".to_vec();
    bin.extend_from_slice(b" and again bin-member-secret-3 \xc3\x28");
    let raw = bundle::build(
        &[
            ("b/text.log".into(), b"password: text-member-4\n".to_vec()),
            ("b/boot.log".into(), bin.clone()),
        ],
        0,
    )
    .expect("tar");
    let t = tmp.path().join("b.tar.gz");
    std::fs::write(&t, raw).expect("write");
    let s = redact_path(&t, None, &[]).expect("redact");
    assert_eq!(s.redacted_bytes, vec!["b.tar.gz!b/boot.log".to_string()]);
    let entries = bundle::read(&std::fs::read(&t).expect("read")).expect("tar");
    let boot = &entries
        .iter()
        .find(|(p, _)| p == "b/boot.log")
        .expect("member")
        .1;
    let text = String::from_utf8_lossy(boot);
    assert!(!text.contains("bin-member-secret-3"), "{text}");
    assert!(
        boot.starts_with(b"\xff\xfe garbage K3S_TOKEN=<REDACTED-"),
        "{text}"
    );
    assert!(boot.ends_with(b" \xc3\x28"), "{text}");
}

#[test]
fn user_names_and_short_secrets_do_not_shred_words() {
    let mut r = Redactor::new(&[]);
    let text = "configs:\n  docker.io:\n    auth:\n      username: repro\n      password: admin\n";
    let out = r.redact_text(text);
    assert!(
        out.contains("username: <REDACTED-1>") && out.contains("password: <REDACTED-2>"),
        "{out}"
    );
    // Elsewhere the user name is a word like any other, and a short password goes only whole.
    let out = r.redact_text("reproduced with repro.local/k3s-sim; the administrator typed admin\n");
    assert_eq!(
        out,
        "reproduced with repro.local/k3s-sim; the administrator typed <REDACTED-2>\n"
    );
}

/// Hostile lines up to 64 KiB (inspect keeps evidence lines up to 256 KiB) are redacted in
/// time linear in their length: `a=a=a=…` took 274 s at 64 KiB before (issue #24). Every
/// shape is timed on its own, and the secret after the chain is still found.
#[test]
fn hostile_keyed_chains_take_linear_time() {
    let n = 64 * 1024;
    let chain = |unit: &str| unit.repeat(n / unit.len());
    for unit in [
        "a=", "a:", "a: ", "--a ", "é--a ", "x=\"", "msg=\\\"", "k=a,", "é=",
    ] {
        let line = format!("{} token=after-the-chain-1234", chain(unit));
        let t = std::time::Instant::now();
        let out = red(&line);
        let took = t.elapsed();
        // The figure of the issue is `a=` under a second; the other shapes get twice that in
        // an unoptimised test build on a shared machine (quadratic, they took minutes).
        let limit = if unit == "a=" { 1000 } else { 2000 };
        assert!(
            took < std::time::Duration::from_millis(limit),
            "{unit:?} × {}: {took:?}",
            n / unit.len()
        );
        assert!(
            !out.contains("after-the-chain-1234"),
            "{unit:?}: secret kept"
        );
    }
}

// Issue #24: values learned whole, and the shapes the campaign found in clear.

/// A value the scenario gave under a secret key is replaced whole, wherever a shape rule would
/// have cut it (`,` `"` `&` end an unquoted keyed value).
#[test]
fn a_learned_value_is_never_split_by_a_shape_rule() {
    for v in [
        "a,b-tail-kept",
        "pa\"ss-tail-kept",
        "x&y-tail-kept",
        "one two,three",
    ] {
        let mut r = Redactor::new(&[]);
        r.learn_whole(v);
        let out = r.redact_text(&format!("PASSWORD={v} next"));
        assert_eq!(out, "PASSWORD=<REDACTED-1> next", "{v:?}");
        let j = r.redact_json(&json!({"Env": [format!("PASSWORD={v}")]}));
        assert_eq!(j, json!({"Env": ["PASSWORD=<REDACTED-1>"]}), "{v:?}");
        // Learned by a caller that learns first and redacts after, the same.
        let mut r = Redactor::new(&[]);
        r.learn_whole(v);
        r.learn_text(&format!("PASSWORD={v}"));
        assert_eq!(r.secret_count(), 1, "{v:?} learned in pieces");
    }
}

/// Without knowledge, an env entry of a JSON array (`docker inspect`'s `Config.Env`) is
/// `NAME=value` whole: the value runs to the end of the string.
#[test]
fn a_json_env_entry_is_its_whole_value() {
    let out = Redactor::new(&[]).redact_json(&json!({"Env": ["DB_PASS=a,b&c\"d", "PATH=/bin"]}));
    assert_eq!(out, json!({"Env": ["DB_PASS=<REDACTED-1>", "PATH=/bin"]}));
}

#[test]
fn secrets_encryption_key_is_a_secret_the_flag_is_not() {
    let out = red("SECRETS_ENCRYPTION_KEY=c2VjcmV0LWVuYy1rZXktMTIz\nsecrets-encryption: true\nsecrets-encryption-provider: aescbc\n");
    gone(
        &out,
        "c2VjcmV0LWVuYy1rZXktMTIz",
        "SECRETS_ENCRYPTION_KEY=<REDACTED-1>",
    );
    assert!(
        out.contains("secrets-encryption: true\nsecrets-encryption-provider: aescbc"),
        "{out}"
    );
    assert!(is_secret_key("K3S_SECRETS_ENCRYPTION_KEY"));
    assert!(!is_secret_key("secrets-encryption"));
}

/// k3s's install.sh writes k3s.service with one quoted argument a line.
#[test]
fn install_sh_unit_lines_flag_then_value() {
    let unit = "ExecStart=/usr/local/bin/k3s \\\n    server \\\n\t'--token' \\\n\t'unit-token-value-1' \\\n\t'--agent-token' \\\n\tunit-agent-token-2 \\\n\t'--node-name' \\\n\t'etcd-1' \\\n\t'--token' \\\n\t'it'\\''s-quoted-tok3n' \\\n";
    let out = red(unit);
    assert!(!out.contains("s-quoted-tok3n"), "{out}");
    gone(
        &out,
        "unit-token-value-1",
        "'--token' \\\n\t'<REDACTED-1>' \\",
    );
    gone(&out, "unit-agent-token-2", "\t<REDACTED-2> \\");
    assert!(out.contains("'etcd-1'"), "{out}");
}

#[test]
fn short_token_flag_of_k3s() {
    let out = red("curl -sfL https://get.k3s.io | sh -s - agent -s https://10.0.0.1:6443 -t shorttok3n99\nk3s agent -t 'quoted-tok-1' --node-name n1\n");
    gone(&out, "shorttok3n99", "-t <REDACTED-1>");
    gone(&out, "quoted-tok-1", "-t '<REDACTED-2>'");
    // Other tools' `-t` is left alone.
    let plain = "docker exec -t etcd-1 sh\ntail -t 5 file\n";
    assert_eq!(red(plain), plain);
}

/// URL credentials: user info without a password is a token, and a password may hold a slash;
/// what only looks like them stays.
#[test]
fn url_user_info_tokens_and_passwords_holding_a_slash() {
    for (text, secret, kept, plain) in [
        (
            "git clone https://ghp_pl4nt3dT0k3nValue42@github.com/o/r.git",
            "ghp_pl4nt3dT0k3nValue42",
            "https://<REDACTED-1>@github.com/o/r.git",
            // A plain user name stays.
            "ssh://git@github.com/o/r.git https://admin@reg.example/v2/",
        ),
        (
            "DOCKER_HOST=tcp://admin:sl/pw-x@10.0.0.2:2376 next",
            "sl/pw-x",
            "tcp://admin:<REDACTED-1>@10.0.0.2:2376 next",
            // A port then a path with an `@` (an image digest) is not a password.
            "pull https://reg.example:5000/v2/img@sha256:0123abcd",
        ),
    ] {
        gone(&red(text), secret, kept);
        assert_eq!(red(plain), plain);
    }
}

#[test]
fn kubernetes_env_name_then_value() {
    let yaml = "env:\n- name: AWS_SECRET_ACCESS_KEY\n  value: k8s-env-secret-1\n- name: REGION\n  value: eu-west-1\n- value: k8s-env-secret-2\n  name: DB_PASSWORD\n";
    let out = red(yaml);
    gone(&out, "k8s-env-secret-1", "  value: <REDACTED-1>");
    gone(&out, "k8s-env-secret-2", "- value: <REDACTED-2>");
    assert!(out.contains("value: eu-west-1"), "{out}");
    let j = Redactor::new(&[]).redact_json(&json!({"env": [
        {"name": "AWS_SECRET_ACCESS_KEY", "value": "k8s-json-secret-3"},
        {"name": "REGION", "value": "eu-west-1"}
    ]}));
    assert_eq!(j["env"][0]["value"], "<REDACTED-1>");
    assert_eq!(j["env"][1]["value"], "eu-west-1");
}

#[test]
fn logrus_escaped_quoted_pairs() {
    let out = red(
        r#"time="x" level=info msg="args: [\"password=logrus-pw-1\" \"--x\"] {\"password\":\"logrus-pw-2\"}""#,
    );
    gone(&out, "logrus-pw-1", r#"\"password=<REDACTED-1>\""#);
    gone(&out, "logrus-pw-2", r#"{\"password\":\"<REDACTED-2>\"}"#);
}

/// A line cut at the 256 KiB limit keeps BEGIN but loses END: the body goes to the end.
#[test]
fn a_pem_key_cut_before_its_end_marker() {
    let body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCcutPemBody0001\\nMIIEcutPemBody0002zzzzzzzzzzzz";
    let line = format!("msg=\"key: -----BEGIN RSA PRIVATE KEY-----\\n{body}");
    let out = red(&line);
    gone(&out, "cutPemBody0001", "-----BEGIN RSA PRIVATE KEY-----");
    gone(&out, "cutPemBody0002", "<REDACTED-1>");
}

/// An env file's line (`PASSWORD=a1,tail2`, `/etc/default/<unit>`) is a secret to the line's
/// end: a `,` inside the value is not where it stops (found by the hardening campaign).
#[test]
fn an_env_line_value_is_redacted_whole() {
    let file = "HTTP_PROXY=http://proxy.local:3128\nPASSWORD=a1,tail2\n  export K3S_TOKEN=\"tok;en two\"\nlevel=info msg=ok\n";
    let out = Redactor::new(&[]).redact_file("rke2-server", file);
    for secret in ["a1", "tail2", "tok;en", "two"] {
        assert!(!out.contains(secret), "{secret} in {out}");
    }
    assert!(
        out.contains("HTTP_PROXY=http://proxy.local:3128\n"),
        "{out}"
    );
    assert!(out.contains("level=info msg=ok"), "{out}");
    assert!(out.contains("PASSWORD=<REDACTED-"), "{out}");
}

/// A file's name is not a secret: `repro validate` on `my-token.yaml` prints its line and
/// column, never a placeholder where the position should be.
#[test]
fn positions_after_secret_looking_file_names_stay() {
    for name in [
        "my-token.yaml",
        "db-password.yml",
        "secret.json",
        "api-key.toml",
    ] {
        let line = format!("error: unknown key\n  --> topologies/{name}:3:5\n");
        assert_eq!(red(&line), line, "{name}");
    }
    // The key itself, not a file, stays a secret key.
    assert!(red("token: s3cr3t-value-1").contains("<REDACTED-1>"));
    assert!(red("auth.token=s3cr3t-value-1").contains("<REDACTED-1>"));
}

/// The kubelet's config drop-in (k3s writeKubeletConfig, read by the cluster-dns probe) has a
/// map named `authorization:`; its next line is no credential, and a learned `mode:` would hide
/// every `…-mode:` key of every config after it.
#[test]
fn an_authorization_map_in_yaml_is_no_header() {
    let file = "authentication:\n  anonymous:\n    enabled: false\nauthorization:\n  mode: Webhook\n  webhook:\n    cacheAuthorizedTTL: 5m0s\nclusterDNS:\n- 10.43.0.10\n";
    let mut r = super::Redactor::new(&[]);
    r.learn_text(file);
    assert!(r.knowledge().is_empty(), "{:?}", r.knowledge());
    assert_eq!(
        r.redact_text("egress-selector-mode: \"disabled\"\n"),
        "egress-selector-mode: \"disabled\"\n"
    );
    // a header still is one
    let out = red("Authorization: Bearer abcdefghijk123\n");
    assert!(!out.contains("abcdefghijk123"), "{out}");
}
