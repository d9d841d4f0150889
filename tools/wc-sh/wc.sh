#!/usr/bin/env bash
# wc-sh: count the lines, words and bytes of files. An ACOR tool in bash:
# acor.sh (shipped with acor; acor passes its path in ACOR_SH) writes the
# sections, escaped and framed, exactly as the Python library does.
#
#     acor wc-sh FILE...
set -u

if [ -z "${ACOR_SH:-}" ]; then  # run directly: ask acor's Python where it is
    ACOR_SH=$("${ACOR_PYTHON:-python3}" -c 'import acor, os
print(os.path.join(os.path.dirname(acor.__file__), "share", "acor.sh"))') || {
        echo "wc-sh: cannot find acor.sh: run it with acor, or set ACOR_SH" >&2
        exit 2
    }
fi
. "$ACOR_SH"

acor_start

# Under acor the arguments arrive checked against the manifest's schema, as
# JSON (ACOR_ARGS; acor answers --help and wrong flags itself); run
# directly, every argument is a file.
files=()
if [ -n "${ACOR_ARGS:-}${ACOR_ARGS_FILE:-}" ]; then
    acor_arg_array files files
else
    files=("$@")
fi
((${#files[@]})) || acor_fail E_USAGE "No file given" \
    "Give one or more files, e.g. acor wc-sh notes.txt." \
    "usage: acor wc-sh FILE..." acor wc-sh --help

json="" failed=0 done=0
for file in "${files[@]}"; do
    done=$((done + 1))
    if [ ! -f "$file" ] || [ ! -r "$file" ]; then
        acor_error E_FILE_NOT_FOUND "No readable file $file" \
            "Check the path (relative paths start from the current directory), then run it again."
        failed=1
    else
        # wc prints lines, words, bytes in this order whatever the options;
        # the C locale counts bytes and ASCII-blank-separated words.
        read -r lines words bytes < <(LC_ALL=C wc -l -w -c < "$file")
        json+="${json:+, }{\"path\": $(acor_json_string "$file"), \"lines\": $lines, \"words\": $words, \"bytes\": $bytes}"
    fi
    acor_progress_bar "$done" "${#files[@]}" "Counted"
done

acor_output_data json "[$json]"
if ((failed)); then
    acor_stop failed
    exit 1
fi
acor_stop
