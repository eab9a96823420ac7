#!/usr/bin/env bash
# GitHub disables a scheduled workflow after 60 days without activity in a public repository.
# Enabling the workflow through the API resets that clock without a commit (what
# gautamkrishnar/keepalive-workflow does in its API mode). The nightly calls this every run.
#
# Usage: scripts/nightly-keepalive.sh [WORKFLOW_FILE]   (default nightly.yml)
# Needs `gh` with GH_TOKEN allowed `actions: write`, and GITHUB_REPOSITORY=owner/name.
set -euo pipefail

workflow=${1:-nightly.yml}
repo=${GITHUB_REPOSITORY:?set GITHUB_REPOSITORY=owner/name}
gh api --method PUT "repos/$repo/actions/workflows/$workflow/enable"
echo "kept $workflow of $repo enabled"
