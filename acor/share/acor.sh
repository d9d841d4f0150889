# acor.sh: speak ACOR from a bash script (bash 3.2 or later).
#
#     . "${ACOR_SH:?run this tool with acor}"   # acor sets ACOR_SH
#     acor_start
#     acor_progress 50 "Halfway"
#     acor_output "Counted 3 lines"
#     acor_output_data json '{"lines": 3}'
#     acor_stop                                 # or acor_fail CODE MESSAGE
#
# The same rules as the Python library (docs/protocol.md): every text is
# escaped so that no line of it can start a section; under acor every
# section is framed with the run's token, read once when this file is
# sourced (from the file descriptor ACOR_FRAME_FD, else the variable
# ACOR_FRAME_TOKEN) and removed, so programs the script runs cannot forge
# a section. Run directly, it writes plain ACOR Markdown.
#
# Functions (each returns 1, with a message on stderr, when misused):
#   acor_start                          ## Status: Ready (installs an EXIT trap)
#   acor_status STATE [MESSAGE]         an intermediate status (Working...)
#   acor_progress PERCENT [MESSAGE]     PERCENT: a number, 0 to 100
#   acor_progress_bar CURRENT TOTAL [LABEL]
#   acor_output [TEXT]                  TEXT, or stdin without an argument
#   acor_output_data FORMAT [DATA]      json|yaml|text|markdown; stdin too
#   acor_error CODE MESSAGE [RECOVERY [DETAILS [NEXT...]]]
#                                       the run goes on; NEXT: the argv of
#                                       the command to run next
#   acor_directive TEXT                 written once, before the ending
#   acor_suggestions ITEM...
#   acor_heartbeat                      keeps an idle timeout from firing
#   acor_stop [complete|failed|cancelled]
#   acor_fail CODE MESSAGE [RECOVERY [DETAILS [NEXT...]]]
#                                       error, Failed, exit 1
#                                       (exit 2 for E_USAGE)
#   acor_input_needed MESSAGE [FIELDS_JSON [AUDIENCE]]
#                                       Input Needed, exit 3; FIELDS_JSON:
#                                       one line, e.g. '{"yes": {"type":
#                                       "boolean"}}'; AUDIENCE: agent|human
#   acor_human NAME                     prints what a person gave for the
#                                       human-only argument NAME (returns 1
#                                       when no person gave it)
#   acor_arg NAME                       prints the validated value of the
#                                       argument NAME (an array: one item
#                                       per line); returns 1 when it was
#                                       not given
#   acor_arg_array NAME VAR             sets the bash array VAR to the
#                                       items of the array argument NAME
#                                       (exact, newlines and all)
#   acor_json_string TEXT               prints TEXT as a JSON string
#
# The EXIT trap ends a run the script left running: Complete on exit
# status 0, otherwise an Error (unless one was reported) and Failed, so a
# `set -e` script that dies mid-way still ends its transcript.

acor__token=""
if [ -n "${ACOR_FRAME_FD:-}" ]; then
    # Only a pipe, as the library: a descriptor that is a terminal or a
    # file is not the launcher's to read. The launcher closed its writing
    # end, so the read ends at once (the timeout is a guard).
    case $ACOR_FRAME_FD in
        *[!0-9]*|[012]) ;;
        *) if [ -p "/dev/fd/$ACOR_FRAME_FD" ]; then
               IFS= read -r -t 1 acor__token 2>/dev/null <&"$ACOR_FRAME_FD"
               eval "exec $ACOR_FRAME_FD<&-"
           fi ;;
    esac
fi
if [ -z "$acor__token" ]; then
    acor__token=${ACOR_FRAME_TOKEN:-}
fi
unset ACOR_FRAME_FD ACOR_FRAME_TOKEN

# What a person gave for the tool's human-only arguments (docs/protocol.md,
# "Human-only arguments"): NAME=VALUE lines, percent-encoded, on a pipe the
# launcher names in ACOR_HUMAN_FD. Read once, the descriptor closed and the
# variable removed, so programs the script runs inherit neither.
acor__human=""
if [ -n "${ACOR_HUMAN_FD:-}" ]; then
    case $ACOR_HUMAN_FD in
        *[!0-9]*|[012]) ;;
        *) if [ -p "/dev/fd/$ACOR_HUMAN_FD" ]; then
               acor__human=$(head -c 32768 <&"$ACOR_HUMAN_FD" 2>/dev/null)
               eval "exec $ACOR_HUMAN_FD<&-"
           fi ;;
    esac
fi
unset ACOR_HUMAN_FD

# The tool's validated arguments, one JSON object (docs/protocol.md,
# "Arguments as JSON"): in ACOR_ARGS, or in the file ACOR_ARGS_FILE names
# when they are too large for the environment. acor writes one member per
# line, so acor_arg reads it without a JSON parser. Both variables stay,
# for programs the script hands them to (jq, say).
acor__args=""
if [ -n "${ACOR_ARGS_FILE:-}" ] && [ -r "$ACOR_ARGS_FILE" ]; then
    acor__args=$(cat "$ACOR_ARGS_FILE")
else
    acor__args=${ACOR_ARGS:-}
fi
case $acor__token in
    *[!0-9A-Za-z]*) acor__token="" ;;  # not a token the launcher makes
esac
acor__mark=$'\x1e'"acor:$acor__token"$'\x1e'
acor__state=created
acor__errored=""
acor__directives=()
acor__r=""

# A line is risky when, after blanks, it could start a heading, a setext
# underline, a fence, an HTML block that survives a blank line or a field
# line (**Next**:), or begins with the escape character or the framing mark
# (docs/protocol.md, "Escaping"). Nested text (items, fields) is stricter:
# no line may open any block, and an indented line gets its backslash in
# column 0. (Digits here are ASCII, as CommonMark's list markers are.)
acor__starts=$'#{1,6}([ \t]|$)|=+[ \t]*$|-+[ \t]*$|```|~~~|<[Ss][Cc][Rr][Ii][Pp][Tt]|<[Pp][Rr][Ee]|<[Ss][Tt][Yy][Ll][Ee]|<[Tt][Ee][Xx][Tt][Aa][Rr][Ee][Aa]|<[!?]|\\*\\*[A-Z][A-Za-z ]{0,30}\\*\\*:|__[A-Z][A-Za-z ]{0,30}__:|\\\\|\x1e'
acor__risky=$'^([ \t\f\v]*)('"$acor__starts"')'
acor__nested=$'^([ \t\f\v]*)('"$acor__starts"$'|[-+*]([ \t]|$)|-[ \t]*-[ \t]*-|_[ \t]*_[ \t]*_|[0-9]{1,9}[.)]([ \t]|$)|[>[<|]|\\*\\*|__)'
acor__indented=$'^[ \t]+[^ \t]'
acor__candidate=$'(^|\n)[ \t\f\v]*[-#=`~<*_\\\\\x1e]'
acor__closing=$'^(.*[^#]|)(#+[ \t]*)$'
acor__control=$'*[\x01-\x1f]*'
acor__safe_word='^[A-Za-z0-9_@%+=:,./-]+$'

acor__warn() {
    printf 'acor.sh: %s\n' "$*" >&2
    return 1
}

acor__fold() {  # CRLF and lone CR become LF, as CommonMark reads them
    acor__r=${1//$'\r\n'/$'\n'}
    acor__r=${acor__r//$'\r'/$'\n'}
}

acor__escape_text() {  # TEXT -> acor__r: block escaping
    local LC_ALL=C line out=""
    acor__fold "$1"
    if ! [[ $acor__r =~ $acor__candidate ]]; then
        return 0  # no line starts with a character that can be risky
    fi
    while IFS= read -r line; do
        if [[ $line =~ $acor__risky ]]; then
            line=${BASH_REMATCH[1]}\\${line:${#BASH_REMATCH[1]}}
        fi
        out+=$line$'\n'
    done <<< "$acor__r"
    acor__r=${out%$'\n'}
}

acor__escape_nested() {  # TEXT -> acor__r: escaping inside items, fields
    local LC_ALL=C line out=""
    acor__fold "$1"
    while IFS= read -r line; do
        if [[ $line =~ $acor__indented ]]; then
            line=\\$line
        elif [[ $line =~ $acor__nested ]]; then
            line=${BASH_REMATCH[1]}\\${line:${#BASH_REMATCH[1]}}
        fi
        out+=$line$'\n'
    done <<< "$acor__r"
    acor__r=${out%$'\n'}
}

acor__escape_inline() {  # TEXT -> acor__r: for a heading line
    local LC_ALL=C
    acor__fold "$1"
    acor__r=${acor__r//\\/\\\\}
    acor__r=${acor__r//$'\n'/\\n}
    if [[ $acor__r =~ $acor__closing ]]; then
        acor__r=${BASH_REMATCH[1]}\\${BASH_REMATCH[2]}
    fi
}

acor__indent() {  # TEXT (escaped) -> acor__r: later lines indented by two
    local first=${1%%$'\n'*} rest line out=""
    if [[ $1 != *$'\n'* ]]; then
        acor__r=$1
        return 0
    fi
    rest=${1#*$'\n'}
    while IFS= read -r line; do
        if [ -n "$line" ]; then out+=$'\n  '$line; else out+=$'\n'; fi
    done <<< "$rest"
    acor__r=$first$out
}

acor__field() {  # LABEL VALUE -> acor__r: "**Label**: value", indented
    acor__escape_nested "$2"
    if [[ ${acor__r%%$'\n'*} ]]; then acor__r=" $acor__r"; fi
    acor__indent "**$1**:$acor__r"
}

acor__item() {  # ITEM -> acor__r: one "- " bullet
    local first rest=""
    acor__escape_nested "$1"
    first=${acor__r%%$'\n'*}
    if [[ $acor__r == *$'\n'* ]]; then rest=$'\n'${acor__r#*$'\n'}; fi
    # A blank first line would make the bullet an empty item, which a
    # reader takes for a setext underline after a paragraph.
    if [[ -z ${first//[$' \t']/} ]]; then first=\\$first; fi
    acor__indent "- $first$rest"
}

acor__shell_join() {  # ARGV... -> acor__r: the command line (shlex.join)
    local LC_ALL=C word out="" q="'" quoted="'\"'\"'"
    for word in "$@"; do
        if ! [[ $word =~ $acor__safe_word ]]; then
            word="'${word//$q/$quoted}'"
        fi
        out+=${out:+ }$word
    done
    acor__r=$out
}

acor__write() {  # SECTION (heading line, body lines, blank line)
    if [ -n "$acor__token" ]; then
        printf '%s%s%send\n' "$acor__mark" "$1" "$acor__mark"
    else
        printf '%s' "$1"
    fi
}

acor__running() {
    if [ "$acor__state" != running ]; then
        acor__warn "$1: the run is $acor__state (call acor_start first; nothing may follow acor_stop)"
        return 1
    fi
}

acor__text_section() {  # HEADING TEXT
    if [ -n "$2" ]; then
        acor__escape_text "$2"
        acor__write "## $1"$'\n'"$acor__r"$'\n\n'
    else
        acor__write "## $1"$'\n\n'
    fi
}

acor__capitalize() {  # WORD -> acor__r: "in review" -> "In review"
    local lower=abcdefghijklmnopqrstuvwxyz upper=ABCDEFGHIJKLMNOPQRSTUVWXYZ
    local c i out="" word=$1
    for ((i = 0; i < ${#word}; i++)); do
        c=${word:i:1}
        if ((i == 0)) && [[ $c == [a-z] ]]; then
            c=${lower%%"$c"*}; c=${upper:${#c}:1}
        elif ((i > 0)) && [[ $c == [A-Z] ]]; then
            c=${upper%%"$c"*}; c=${lower:${#c}:1}
        fi
        out+=$c
    done
    acor__r=$out
}

acor__flush_directives() {
    local item body=""
    ((${#acor__directives[@]})) || return 0
    for item in "${acor__directives[@]}"; do
        acor__item "$item"
        body+=$acor__r$'\n'
    done
    acor__directives=()
    acor__write "## AI Directive"$'\n'"$body"$'\n'
}

acor__percent() {  # NUMBER -> acor__r: "42", "12.5", "33.33", clamped 0-100
    local LC_ALL=C whole frac hundredths
    if ! [[ $1 =~ ^(-?)([0-9]+)(\.([0-9]*))?$ ]]; then
        acor__warn "acor_progress: the percentage must be a number from 0 to 100, not '$1'"
        return 1
    fi
    if [ -n "${BASH_REMATCH[1]}" ]; then acor__r=0; return 0; fi
    whole=${BASH_REMATCH[2]}
    frac=${BASH_REMATCH[4]}000
    whole=${whole#"${whole%%[!0]*}"}  # no leading zeros: 08 is not octal
    if ((${#whole} > 3)); then acor__r=100; return 0; fi
    hundredths=$(( ${whole:-0} * 100 + 10#${frac:0:2} + (10#${frac:2:1} >= 5) ))
    ((hundredths > 10000)) && hundredths=10000
    if ((hundredths % 100 == 0)); then
        acor__r=$((hundredths / 100))
    elif ((hundredths % 10 == 0)); then
        acor__r=$((hundredths / 100)).$((hundredths % 100 / 10))
    else
        printf -v acor__r '%d.%02d' $((hundredths / 100)) $((hundredths % 100))
    fi
}

acor_start() {
    if [ "$acor__state" != created ]; then return 0; fi
    acor__state=running
    trap 'acor__on_exit $?' EXIT
    acor__write $'## Status: Ready\n\n'
}

acor_status() {
    acor__running acor_status || return 1
    case $1 in
        [Cc]omplete|[Ff]ailed|[Cc]ancelled)
            acor__warn "acor_status: '$1' is not an intermediate state (use acor_stop)"
            return 1 ;;
    esac
    if ! [[ $1 =~ ^[A-Za-z][A-Za-z0-9_\ -]{0,63}$ ]]; then
        acor__warn "acor_status: a state is a word like Working, not '$1'"
        return 1
    fi
    acor__capitalize "$1"
    acor__escape_inline "$acor__r"
    acor__text_section "Status: $acor__r" "${2:-}"
}

acor_progress() {
    acor__running acor_progress || return 1
    acor__percent "$1" || return 1
    acor__text_section "Progress: $acor__r%" "${2:-}"
}

acor_progress_bar() {
    local current=$1 total=$2 label=${3:-} message percent
    acor__running acor_progress_bar || return 1
    if ! [[ $current =~ ^[0-9]+$ && $total =~ ^[0-9]+$ ]]; then
        acor__warn "acor_progress_bar: CURRENT and TOTAL must be whole numbers, not '$current' '$total'"
        return 1
    fi
    if ((total == 0 || current >= total)); then
        percent=100
    else
        # Hundredths, rounded: integer arithmetic only.
        acor__percent $((current * 100 / total)).$(printf '%03d' $(( (current * 100000 / total) % 1000 )))
        percent=$acor__r
    fi
    message="$label ($current/$total)"
    acor__text_section "Progress: $percent%" "${message# }"
}

acor__read_stdin() {  # stdin -> acor__r, without trailing line ends
    IFS= read -r -d '' acor__r || true
    while [[ $acor__r == *$'\n' ]]; do acor__r=${acor__r%$'\n'}; done
}

acor_output() {
    local text
    acor__running acor_output || return 1
    if (($# == 0)); then acor__read_stdin; text=$acor__r; else text=$1; fi
    acor__text_section "Output" "$text"
}

acor_output_data() {
    local format=$1 data fence='```'
    acor__running acor_output_data || return 1
    case $format in
        json|yaml|text|markdown) ;;
        *) acor__warn "acor_output_data: FORMAT is json, yaml, text or markdown, not '$format'"
           return 1 ;;
    esac
    if (($# < 2)); then acor__read_stdin; data=$acor__r; else data=$2; fi
    acor__fold "$data"
    data=$acor__r
    # The data goes verbatim inside a fence longer than any backtick run.
    while [[ $data == *"$fence"* ]]; do fence+='`'; done
    acor__write "## Output Data"$'\n'"$fence$format"$'\n'"$data"$'\n'"$fence"$'\n\n'
}

acor_error() {
    local code=$1 message=$2 recovery=${3-} details=${4-} body
    acor__running acor_error || return 1
    if ! [[ $code =~ ^[A-Za-z0-9_.:-]{1,64}$ ]]; then
        acor__warn "acor_error: the code must be letters, digits, '_', '.', ':' or '-', like E_FILE_NOT_FOUND; not '$code'"
        return 1
    fi
    body="**Code**: $code"
    if (($# >= 4)); then
        acor__field Details "$details"; body+=$'\n'$acor__r
    fi
    if (($# >= 3)); then
        acor__field Recovery "$recovery"; body+=$'\n'$acor__r
    fi
    if (($# >= 5)); then  # the exact command to run next
        acor__shell_join "${@:5}"
        acor__field Next "$acor__r"; body+=$'\n'$acor__r
    fi
    acor__escape_inline "$message"
    acor__write "## Error: $acor__r"$'\n'"$body"$'\n\n'
    acor__errored=1
}

acor_directive() {
    acor__running acor_directive || return 1
    acor__directives+=("$1")
}

acor_suggestions() {
    local item body=""
    acor__running acor_suggestions || return 1
    for item in "$@"; do
        acor__item "$item"
        body+=$acor__r$'\n'
    done
    acor__write "## Suggestions"$'\n'"$body"$'\n'
}

acor_heartbeat() {
    if [ -n "$acor__token" ]; then
        printf '%sheartbeat\n' "$acor__mark"
    else
        printf '<!-- acor:heartbeat -->\n'
    fi
}

acor_stop() {
    local state=${1:-complete}
    case $acor__state in
        running) ;;
        created) acor__warn "acor_stop: the run has not started (call acor_start first)"
                 return 1 ;;
        *) return 0 ;;  # already ended: nothing more to write
    esac
    case $state in
        complete|failed|cancelled) ;;
        *) acor__warn "acor_stop: the state is complete, failed or cancelled, not '$state'"
           return 1 ;;
    esac
    acor__flush_directives
    acor__capitalize "$state"
    acor__write "## Status: $acor__r"$'\n\n'
    acor__state=$state
}

acor_fail() {
    acor_error "$@" || return 1
    acor_stop failed
    if [ "$1" = E_USAGE ]; then exit 2; fi
    exit 1
}

acor_input_needed() {
    local message=$1 fields=${2-} audience=${3:-agent} body=""
    acor__running acor_input_needed || return 1
    case $audience in
        agent|human) ;;
        *) acor__warn "acor_input_needed: the audience must be agent or human, not '$audience'"
           return 1 ;;
    esac
    if [[ $fields == *[$'\n\r']* ]] || { [ -n "$fields" ] && [[ $fields != \{*\} ]]; }; then
        acor__warn "acor_input_needed: FIELDS_JSON must be one line of JSON, an object: {\"name\": {\"type\": \"string\"}}"
        return 1
    fi
    acor__flush_directives
    if [ "$audience" != agent ]; then
        acor__field Audience "$audience"; body+=$'\n'$acor__r
    fi
    if [ -n "$fields" ]; then
        acor__field Fields "$fields"; body+=$'\n'$acor__r
    fi
    if [ -n "$message" ]; then
        acor__escape_text "$message"
        message=$acor__r
    fi
    if [ -n "$body" ]; then
        acor__write "## Input Needed"$'\n'"${message:+$message$'\n\n'}${body#$'\n'}"$'\n\n'
    else
        acor__text_section "Input Needed" "$1"
    fi
    acor__state=input_needed
    exit 3
}

acor_human() {  # NAME -> the value a person gave, percent-decoded
    local line value
    while IFS= read -r line; do
        if [ "${line%%=*}" = "$1" ] && [[ $line == *=* ]]; then
            value=${line#*=}
            value=${value//\\/\\\\}
            printf '%b' "${value//%/\\x}"
            return 0
        fi
    done <<< "$acor__human"
    return 1
}

acor__json_value() {  # one JSON value as acor writes it -> acor__r
    local LC_ALL=C s=$1 out="" c
    case $s in
        \"*\") s=${s#\"}; s=${s%\"} ;;
        *) acor__r=$s; return 0 ;;  # a number, true or false
    esac
    while [[ $s == *\\* ]]; do
        out+=${s%%\\*}
        s=${s#*\\}
        c=${s:0:1}
        s=${s:1}
        case $c in
            n) out+=$'\n' ;;
            t) out+=$'\t' ;;
            r) out+=$'\r' ;;
            b) out+=$'\b' ;;
            f) out+=$'\f' ;;
            u) printf -v c "\\$(printf %03o "0x${s:0:4}")"  # a control
               out+=$c; s=${s:4} ;;
            *) out+=$c ;;  # \" \\ \/
        esac
    done
    acor__r=$out$s
}

acor__arg_values() {  # NAME -> acor__vals: its items; 1 if not given
    local key line value in_array=0
    acor__vals=() acor__array=0
    key=" $(acor_json_string "$1"): "
    while IFS= read -r line; do
        if ((in_array)); then
            case $line in ' ]'|' ],') return 0 ;; esac
            value=${line#  }
        elif [[ $line == "$key"* ]]; then
            value=${line#"$key"}
            case $value in
                '[') in_array=1 acor__array=1; continue ;;
                '[]'|'[],') acor__array=1; return 0 ;;
                null|null,) return 1 ;;
            esac
        else
            continue
        fi
        case $value in \"*\") ;; *,) value=${value%,} ;; esac
        acor__json_value "$value"
        acor__vals+=("$acor__r")
        ((in_array)) || return 0
    done <<< "$acor__args"
    return 1
}

acor_arg() {  # NAME -> its value; an array's items one per line
    (($# == 1)) || { acor__warn "usage: acor_arg NAME"; return 1; }
    acor__arg_values "$1" || return 1
    if ((!acor__array)); then
        printf '%s' "${acor__vals[0]}"
    elif ((${#acor__vals[@]})); then
        printf '%s\n' "${acor__vals[@]}"
    fi
}

acor_arg_array() {  # NAME VAR -> the array VAR holds NAME's items
    (($# == 2)) && [[ $2 =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] ||
        { acor__warn "usage: acor_arg_array NAME VAR"; return 1; }
    acor__arg_values "$1" || { eval "$2=()"; return 1; }
    eval "$2=(\"\${acor__vals[@]}\")"
}

acor_json_string() {
    local LC_ALL=C s=$1 i hex c u
    s=${s//\\/\\\\}
    s=${s//\"/\\\"}
    s=${s//$'\n'/\\n}
    s=${s//$'\r'/\\r}
    s=${s//$'\t'/\\t}
    if [[ $s == $acor__control ]]; then
        for ((i = 1; i < 32; i++)); do
            printf -v hex '%02x' "$i"
            printf -v c "\\x$hex"
            printf -v u '\\u%04x' "$i"
            s=${s//"$c"/$u}
        done
    fi
    printf '"%s"\n' "$s"
}

acor__on_exit() {
    local status=$1
    trap - EXIT
    if [ "$acor__state" != running ]; then return 0; fi
    if ((status == 0)); then
        acor_stop complete
        return 0
    fi
    if [ -z "$acor__errored" ]; then
        acor_error E_SCRIPT_EXIT "The script exited with status $status before finishing" \
            "Read its stderr for the cause, fix it, then run it again." \
            "exit status: $status"
    fi
    acor_stop failed
}
