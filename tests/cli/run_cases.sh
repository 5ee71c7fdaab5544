#!/usr/bin/env bash
# Runs the declarative CLI cases in tests/cli/*.test against an autopar binary.
#
# A .test file holds cases separated by lines of "---". Each case has:
#   run: <shell command line; `autopar` is the binary under test; runs in the repository root>
#   exit: <expected exit status>
#   expect: <a substring the combined stdout+stderr must contain>       (any number)
#   reject: <a substring that must NOT appear>                          (any number)
#   lines: <exact number of lines on stderr>                            (optional)
# Lines starting with # are comments.
# Usage: run_cases.sh AUTOPAR_BINARY CASES_DIR [NAME]   (NAME: run only NAME.test)
set -u
binary=$1
cases_dir=$2
repo_root=$(cd "$cases_dir/../.." && pwd)
passed=0
failed=0
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

autopar() { "$binary" "$@"; }
export -f autopar 2>/dev/null || true
export binary

run_case() {
  local file=$1 line=$2 command=$3 exit_expected=$4 lines_expected=$5
  shift 5
  local -a checks=("$@")
  local out="$scratch/out" err="$scratch/err"
  (cd "$repo_root" && AUTOPAR_SCRATCH="$scratch" bash -c "autopar() { \"\$binary\" \"\$@\"; }; $command" >"$out" 2>"$err")
  local status=$?
  local problems=""
  [[ "$status" == "$exit_expected" ]] || problems+=" exit $status (expected $exit_expected);"
  if [[ -n "$lines_expected" ]]; then
    local count
    count=$(wc -l <"$err")
    [[ "$count" == "$lines_expected" ]] || problems+=" stderr has $count lines (expected $lines_expected);"
  fi
  for check in "${checks[@]}"; do
    local kind=${check%%:*} text=${check#*:}
    if [[ "$kind" == expect ]] && ! grep -qF -- "$text" "$out" "$err"; then
      problems+=" missing '$text';"
    elif [[ "$kind" == reject ]] && grep -qF -- "$text" "$out" "$err"; then
      problems+=" unexpected '$text';"
    fi
  done
  if [[ -z "$problems" ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $file:$line: $command"
    echo "  $problems"
    sed 's/^/  stdout| /' "$out" | head -20
    sed 's/^/  stderr| /' "$err" | head -5
  fi
}

for file in "$cases_dir"/${3:-*}.test; do
  command="" exit_expected=0 lines_expected="" start=0 number=0
  checks=()
  flush() {
    if [[ -n "$command" ]]; then
      run_case "$(basename "$file")" "$start" "$command" "$exit_expected" "$lines_expected" "${checks[@]}"
    fi
    command="" exit_expected=0 lines_expected="" checks=()
  }
  while IFS= read -r text || [[ -n "$text" ]]; do
    number=$((number + 1))
    case "$text" in
      "#"*|"") ;;
      ---*) flush ;;
      run:*) command=${text#run: }; start=$number ;;
      exit:*) exit_expected=${text#exit: } ;;
      lines:*) lines_expected=${text#lines: } ;;
      expect:*) checks+=("expect:${text#expect: }") ;;
      reject:*) checks+=("reject:${text#reject: }") ;;
      *) echo "$(basename "$file"):$number: unknown line: $text"; failed=$((failed + 1)) ;;
    esac
  done <"$file"
  flush
done

echo "$passed passed, $failed failed"
[[ "$failed" == 0 ]]
