package codegen

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// The shell generators write commands for POSIX shells (sh, bash, zsh). Every argument is
// single-quoted, so no header, URL or body value can run a command or expand anything. A
// body that cannot sit in an argument (NUL, control bytes other than tab and newline, or
// invalid UTF-8) is piped from printf with octal escapes.

func init() {
	for lang, f := range map[string]func(*Request) string{"curl": curl, "wget": wget, "httpie": httpie} {
		register(lang, generator{block: func(p *Request) string { return f(p) + "\n" }, comment: "# "})
	}
}

// curl: bodies go through --data-raw (curl treats a leading "@" in --data-binary as a file
// to upload) or --data-binary @- from a pipe. A URL that does not start with a scheme is
// passed with --url so it can never be read as an option; --globoff when it holds
// brackets. Content-Length is left to curl.
func curl(p *Request) string {
	var sb strings.Builder
	sb.WriteString("curl")
	body := len(p.Body) > 0
	switch {
	case p.Method == "HEAD" && !body:
		sb.WriteString(" --head")
	case p.Method == "GET" && !body, p.Method == "POST" && body:
	default:
		sb.WriteString(" -X " + shellQuote(p.Method))
	}
	if strings.ContainsAny(p.URL, "[]") {
		sb.WriteString(" --globoff")
	}
	if strings.HasPrefix(p.URL, "http://") || strings.HasPrefix(p.URL, "https://") {
		sb.WriteString(" " + shellQuote(p.URL))
	} else {
		sb.WriteString(" --url " + shellQuote(p.URL))
	}
	for _, h := range p.Headers {
		if h.Value == "" {
			sb.WriteString(" -H " + shellQuote(h.Name+";")) // "Name:" would remove the field
		} else {
			sb.WriteString(" -H " + shellQuote(h.Name+": "+h.Value))
		}
	}
	if body {
		if argSafe(p.Body) {
			sb.WriteString(" --data-raw " + shellQuote(string(p.Body)))
		} else {
			return "printf " + printfQuote(p.Body) + " | " + sb.String() + " --data-binary @-"
		}
	}
	return sb.String()
}

// wget: wget keeps one value per header name, so repeated fields are joined. A body
// that cannot be an argument is written to a temporary file first (wget reads
// --body-file by its size, so a pipe will not do).
func wget(p *Request) string {
	var sb strings.Builder
	sb.WriteString("wget -q -O - --content-on-error")
	sb.WriteString(" --method=" + shellQuote(p.Method))
	for _, h := range joined(p.Headers) {
		sb.WriteString(" --header=" + shellQuote(h.Name+": "+h.Value))
	}
	var tmp tempFiles
	if len(p.Body) > 0 {
		if argSafe(p.Body) {
			sb.WriteString(" --body-data=" + shellQuote(string(p.Body)))
		} else {
			sb.WriteString(" --body-file=" + tmp.add(p.Body))
		}
	}
	sb.WriteString(" -- " + shellQuote(p.URL))
	return tmp.wrap(sb.String())
}

// tempFiles are files a command reads its data from; wrap makes a subshell that writes
// them, runs the command and removes them (whatever happens), with the command's status.
type tempFiles struct{ set strings.Builder }

// add returns the shell word for a new file holding d.
func (t *tempFiles) add(d []byte) string {
	if t.set.Len() == 0 {
		t.set.WriteString("( trap 'rm -f \"$f\"*' EXIT && f=$(mktemp) && ")
	}
	n := strings.Count(t.set.String(), "printf ")
	name := "\"$f." + strconv.Itoa(n) + "\""
	t.set.WriteString("printf " + printfQuote(d) + " > " + name + " && ")
	return name
}

func (t *tempFiles) wrap(cmd string) string {
	if t.set.Len() == 0 {
		return cmd
	}
	return t.set.String() + cmd + " )"
}

// httpie: request items are NAME:VALUE arguments. HTTPie finds the first and longest
// separator (":", ":=", ":@", "==", …) outside backslash escapes, and takes everything
// after it as the value, dropping the backslash of "\X" for X a separator character. So a
// value starting with "=" or "@" gets a backslash, and a value holding a backslash before
// such a character (which no escaping can express) is read from a temporary file with
// NAME:@FILE. An empty value is written NAME; (NAME: would remove the field). The body
// goes through --raw, or a pipe for bytes an argument cannot hold; without a pipe stdin
// is ignored.
func httpie(p *Request) string {
	var sb strings.Builder
	sb.WriteString("http")
	body := len(p.Body) > 0
	pipe := body && !argSafe(p.Body)
	if !pipe {
		sb.WriteString(" --ignore-stdin")
	}
	if body && !pipe {
		sb.WriteString(" --raw " + shellQuote(string(p.Body)))
	}
	sb.WriteString(" " + shellQuote(p.Method) + " " + shellQuote(p.URL))
	var tmp tempFiles
	var notes strings.Builder
	for _, h := range p.Headers {
		v := h.Value
		switch {
		case !utf8.ValidString(v):
			notes.WriteString("# HTTPie sends only UTF-8 header values; " + noNewline(h.Name) + " is left out\n")
		case v == "":
			sb.WriteString(" " + shellQuote(h.Name+";"))
		case httpieUnsafe(v):
			sb.WriteString(" " + shellQuote(h.Name+":@") + tmp.add([]byte(v)))
		case v[0] == '=' || v[0] == '@':
			sb.WriteString(" " + shellQuote(h.Name+":\\"+v))
		default:
			sb.WriteString(" " + shellQuote(h.Name+":"+v))
		}
	}
	cmd := sb.String()
	if pipe {
		cmd = "printf " + printfQuote(p.Body) + " | " + cmd
	}
	return notes.String() + tmp.wrap(cmd)
}

// noNewline keeps a comment on its line (names are tokens; this is belt and braces).
func noNewline(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

// httpieUnsafe: v holds a backslash before one of HTTPie's separator characters.
func httpieUnsafe(v string) bool {
	for i := 0; i+1 < len(v); i++ {
		if v[i] == '\\' && strings.IndexByte(":;=@", v[i+1]) >= 0 {
			return true
		}
	}
	return false
}

// shellQuote single-quotes s for a POSIX shell: inside single quotes nothing is special
// except the quote itself, which is written as '\”. NUL cannot be in an argument and is
// dropped (preparation leaves none in names, values and URLs).
func shellQuote(s string) string {
	s = strings.ReplaceAll(s, "\x00", "")
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// argSafe: d can be a shell argument and reads sensibly on screen.
func argSafe(d []byte) bool {
	if !utf8.Valid(d) {
		return false
	}
	for _, c := range d {
		if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
			return false
		}
	}
	return true
}

// printfQuote writes d as a single-quoted printf format that prints exactly d: printable
// ASCII as is ('%' doubled, '\' doubled), everything else (and the quote) as \ooo.
func printfQuote(d []byte) string {
	var sb strings.Builder
	sb.WriteByte('\'')
	for _, c := range d {
		switch {
		case c == '%':
			sb.WriteString("%%")
		case c == '\\':
			sb.WriteString(`\\`)
		case c == '\'' || c < 0x20 || c >= 0x7f:
			o := strconv.FormatInt(int64(c), 8)
			sb.WriteString(`\` + strings.Repeat("0", 3-len(o)) + o)
		default:
			sb.WriteByte(c)
		}
	}
	sb.WriteByte('\'')
	return sb.String()
}
