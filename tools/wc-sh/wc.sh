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

usage="usage: acor wc-sh FILE...   count the lines, words and bytes of each FILE"
acor_start

files=()
options=1
for arg in "$@"; do
    if ((options)); then
        case $arg in
            --) options=0; continue ;;
            -h|--help) acor_output "$usage"; acor_stop; exit 0 ;;
            -?*) acor_fail E_USAGE "Unknown option $arg" \
                     "A file whose name starts with '-' goes after --, as in the command below." \
                     "$usage" acor wc-sh -- "$arg" ;;
        esac
    fi
    files+=("$arg")
done
((${#files[@]})) || acor_fail E_USAGE "No file given" \
    "Give one or more files, e.g. acor wc-sh notes.txt." "$usage" \
    acor wc-sh --help

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
