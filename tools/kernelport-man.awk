# SPDX-License-Identifier: Apache-2.0
# Turns the CLI's help into kernelport(1) (roff, man macros). The first file is `kernelport
# --help`, each further one `kernelport help COMMAND`; -v version=X.Y.Z. A help text is blocks
# between blank lines: "usage: ..." first, then a one-sentence summary, then paragraphs and
# headed lists ("Options:" over lines "  TERM  description", continued by deeper indents).

# Roff-safe text: a backslash printed as such, a dash that starts an option or stands alone
# as a minus (not one inside a word), and no line starting with a control character.
function esc(s,    out, i, c, prev) {
    gsub(/\\/, "\\e", s)
    out = ""
    prev = "\n"
    for (i = 1; i <= length(s); i++) {
        c = substr(s, i, 1)
        if (c == "-" && prev !~ /[A-Za-z0-9]/)
            out = out "\\-"
        else if ((c == "." || c == "'") && prev == "\n")
            out = out "\\&" c
        else
            out = out c
        prev = c
    }
    return out
}

# "--size NAME" as "\fB\-\-size\fR \fINAME\fR": the name bold, its argument italic.
function term(s,    sp) {
    sp = index(s, " ")
    if (sp == 0)
        return "\\fB" esc(s) "\\fR"
    return "\\fB" esc(substr(s, 1, sp - 1)) "\\fR \\fI" esc(substr(s, sp + 1)) "\\fR"
}

function trim(s) {
    sub(/^[ \t]+/, "", s)
    sub(/[ \t]+$/, "", s)
    return s
}

# Block b of file f as roff: a headed list, or a paragraph.
function block(f, b,    n, lines, i, line, head, text, tpos) {
    n = split(blocks[f, b], lines, "\n")
    head = lines[1]
    if (head ~ /^[A-Z][^:]*:$/) {
        sub(/:$/, "", head)
        if (f == 1) {
            if (match(head, / \(.*\)$/)) {
                text = substr(head, RSTART + 2, RLENGTH - 3)
                head = substr(head, 1, RSTART - 1)
                print ".SH " toupper(head)
                print toupper(substr(text, 1, 1)) substr(text, 2) "."
            } else {
                print ".SH " toupper(head)
            }
        } else {
            print ".PP"
            print head ":"
        }
        for (i = 2; i <= n; i++) {
            line = lines[i]
            if (line ~ /^  [^ ]/) {
                line = substr(line, 3)
                tpos = match(line, /  +/)
                print ".TP"
                if (tpos) {
                    print term(substr(line, 1, RSTART - 1))
                    print esc(substr(line, RSTART + RLENGTH))
                } else {
                    print term(line)
                }
            } else {
                print esc(trim(line))
            }
        }
        if (f == 1 && head == "Commands")
            commands()
        return
    }
    if (f > 1 && head ~ /^Global options: /)
        return # GLOBAL OPTIONS says it once for all
    text = ""
    for (i = 1; i <= n; i++)
        text = text (i > 1 ? "\n" : "") trim(lines[i])
    if (f == 1 && match(text, /^[A-Z][a-z ]*: /)) {
        print ".SH " toupper(substr(text, 1, RLENGTH - 2))
        text = substr(text, RLENGTH + 1)
    } else {
        print ".PP"
    }
    print esc(text)
}

# Each command's own help, after the list of commands.
function commands(    f, b, usage) {
    for (f = 2; f <= nfiles; f++) {
        usage = blocks[f, 1]
        sub(/^usage: /, "", usage)
        print ".SS \"" esc(usage) "\""
        print esc(blocks[f, 2])
        for (b = 3; b <= nblocks[f]; b++)
            block(f, b)
    }
}

FNR == 1 {
    nfiles++
    open = 0
}
/^$/ {
    open = 0
    next
}
{
    if (!open) {
        nblocks[nfiles]++
        blocks[nfiles, nblocks[nfiles]] = $0
        open = 1
    } else {
        blocks[nfiles, nblocks[nfiles]] = blocks[nfiles, nblocks[nfiles]] "\n" $0
    }
}

END {
    usage = blocks[1, 1]
    sub(/^usage: kernelport /, "", usage)
    gsub(/\n */, " ", usage)
    summary = blocks[1, 2]
    sub(/\.$/, "", summary)
    print ".\\\" Generated from the kernelport CLI's help by tools/kernelport-man.sh; do not edit."
    print ".TH KERNELPORT 1 \"\" \"Kernelport " version "\" \"User Commands\""
    print ".SH NAME"
    print "kernelport \\- " esc(tolower(substr(summary, 1, 1)) substr(summary, 2))
    print ".SH SYNOPSIS"
    print ".B kernelport"
    print esc(usage)
    print ".SH DESCRIPTION"
    print esc(blocks[1, 2])
    for (b = 3; b <= nblocks[1]; b++)
        block(1, b)
}
