#!/usr/bin/env bash
# The steps of the mcplife conformance action (action.yml beside this
# file), one subcommand per step. The action runs them on GitHub; .ci/recipe
# runs the same lines of action.yml from a scratch directory outside the
# repository, so the recipe of docs/CI-RECIPE.md is tested as written.
#
#   conformance.sh install        go install github.com/mcplife/mcplife/cmd/harness@$MCPLIFE_VERSION
#   conformance.sh driver-check   harness driver-check -impl "$MCPLIFE_DRIVER"
#   conformance.sh conformance    harness conformance -impl "$MCPLIFE_DRIVER" -junit "$MCPLIFE_JUNIT" ...
#
# Environment (the action's inputs):
#   MCPLIFE_VERSION           harness version: a release tag, a pseudo-version or a commit hash (install)
#   MCPLIFE_DRIVER            the driver's command line, e.g. 'node test/mcplife/driver.js'
#   MCPLIFE_BASELINE          optional file of expected failures (-baseline)
#   MCPLIFE_EXPECT_VERDICTS   optional stored verdict report; any change of verdict fails (-expect-verdicts)
#   MCPLIFE_JUNIT             JUnit XML report to write (-junit)
#   MCPLIFE_VERDICTS          verdict report of this run to write (-verdicts), to store or compare
#   MCPLIFE_FLAGS             optional extra flags of harness conformance, split on white space (e.g. -profile core)
set -euo pipefail

die() { echo "mcplife conformance: $*" >&2; exit 2; }
need() { [ -n "${!1:-}" ] || die "$1 is empty (the action input $2 is required)"; }

# The binary go install writes: $GOBIN, else $GOPATH/bin.
harness_bin() {
  local bin
  bin=$(go env GOBIN)
  [ -n "$bin" ] || bin="$(go env GOPATH)/bin"
  echo "$bin/harness"
}

case "${1:-}" in
  install)
    need MCPLIFE_VERSION version
    go install "github.com/mcplife/mcplife/cmd/harness@$MCPLIFE_VERSION"
    harness=$(harness_bin)
    # The exact module version installed: it pins the requirement set.
    go version -m "$harness" | awk '$1 == "mod" { print "installed", $2 "@" $3 }'
    if [ -n "${GITHUB_PATH:-}" ]; then dirname "$harness" >>"$GITHUB_PATH"; fi
    ;;
  driver-check)
    need MCPLIFE_DRIVER driver
    "$(harness_bin)" driver-check -impl "$MCPLIFE_DRIVER"
    ;;
  conformance)
    need MCPLIFE_DRIVER driver
    need MCPLIFE_JUNIT junit
    need MCPLIFE_VERDICTS verdicts
    args=(-no-color -impl "$MCPLIFE_DRIVER" -junit "$MCPLIFE_JUNIT" -verdicts "$MCPLIFE_VERDICTS")
    if [ -n "${MCPLIFE_BASELINE:-}" ]; then args+=(-baseline "$MCPLIFE_BASELINE"); fi
    if [ -n "${MCPLIFE_EXPECT_VERDICTS:-}" ]; then args+=(-expect-verdicts "$MCPLIFE_EXPECT_VERDICTS"); fi
    # shellcheck disable=SC2206 # extra flags are split on white space on purpose
    if [ -n "${MCPLIFE_FLAGS:-}" ]; then args+=($MCPLIFE_FLAGS); fi
    mkdir -p "$(dirname "$MCPLIFE_JUNIT")" "$(dirname "$MCPLIFE_VERDICTS")"
    "$(harness_bin)" conformance "${args[@]}"
    ;;
  *)
    die "usage: conformance.sh install|driver-check|conformance"
    ;;
esac
