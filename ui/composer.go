package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"inspector/engine"
	"inspector/engine/hooks/replay"
	"inspector/engine/session"
	"inspector/internal/atomicfile"
	"inspector/ui/render"
)

// ComposerEntry is one sent request of the composer history and what came back.
type ComposerEntry struct {
	Sent   time.Time   `json:"sent"`
	Method string      `json:"method"`
	URL    string      `json:"url"`
	Header http.Header `json:"header,omitempty"`
	Body   string      `json:"body,omitempty"`
	// BodyCut: only the first HistoryBodyMax bytes of the body were kept.
	BodyCut bool `json:"body_cut,omitempty"`
	// The result: the new session and its status, or why it failed.
	ID     session.ID `json:"id,omitempty"`
	Status int        `json:"status,omitempty"`
	Reason string     `json:"reason,omitempty"`
	Error  string     `json:"error,omitempty"`
}

// Limits of the composer history: entries kept, request body bytes kept per entry.
const (
	HistoryMax     = 100
	HistoryBodyMax = 16 << 10
)

// ComposerHistory is the list of requests sent from the composer, newest first, saved
// to a JSON file (0600) after every send when it has a path. Safe for concurrent use.
type ComposerHistory struct {
	mu      sync.Mutex
	path    string
	entries []ComposerEntry
}

type historyFile struct {
	Entries []ComposerEntry `json:"entries"`
}

// LoadComposerHistory reads path (missing: empty; "": in memory only). A file that does
// not parse is an error; the history then starts empty, in memory only, and the file is
// never overwritten.
func LoadComposerHistory(path string) (*ComposerHistory, error) {
	h := &ComposerHistory{path: path}
	if path == "" {
		return h, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return h, nil
	}
	var f historyFile
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err != nil {
		h.path = ""
		return h, fmt.Errorf("%s: %w", path, err)
	}
	h.entries = f.Entries
	if len(h.entries) > HistoryMax {
		h.entries = h.entries[:HistoryMax]
	}
	return h, nil
}

// Entries returns a copy of the history, newest first.
func (h *ComposerHistory) Entries() []ComposerEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]ComposerEntry(nil), h.entries...)
}

// Add puts e first (dropping the oldest beyond HistoryMax) and saves the file.
func (h *ComposerHistory) Add(e ComposerEntry) error {
	if len(e.Body) > HistoryBodyMax {
		e.Body, e.BodyCut = strings.ToValidUTF8(e.Body[:HistoryBodyMax], ""), true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.entries = append([]ComposerEntry{e}, h.entries...)
	if len(h.entries) > HistoryMax {
		h.entries = h.entries[:HistoryMax]
	}
	if h.path == "" {
		return nil
	}
	b, err := json.MarshalIndent(historyFile{h.entries}, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(h.path, append(b, '\n'), 0o600)
}

// composerBodyMax bounds the response body text shown beside the request; it is drawn as a
// virtualised list of rows (textRows), so only the visible rows cost anything.
const composerBodyMax = 1 << 20

// Composer builds a request (from a session, the history or blank), sends it through the
// proxy and shows the response beside it; every send goes into the history. UI goroutine
// only; the send runs on a background goroutine.
type Composer struct {
	dbg     Debugger
	history *ComposerHistory
	from    session.ID

	Method  *widget.SelectEntry
	URL     *widget.Entry
	Headers *HeaderTable
	Body    *widget.Entry
	// heldBody is a request body too large to show in Body (setBody).
	heldBody []byte
	SendBtn  *widget.Button
	Result   *widget.Label

	// The response: status line, headers and body of the last send (or reopened entry).
	RespStatus  *widget.Label
	RespHeaders *widget.Label
	RespBody    *widget.List
	respRows    []string

	History        *widget.List
	historyEntries []ComposerEntry

	Content fyne.CanvasObject
	onSent  func(*session.Session)
	// lookup finds a session by id (the window's store) to show a reopened entry's
	// response; nil: only the status is shown.
	lookup func(session.ID) (*session.Session, error)
	post   func(func()) // fyne.Do unless a test queues
}

// NewComposer opens s in the composer (nil: a blank GET request). h may be nil.
func NewComposer(dbg Debugger, s *session.Session, h *ComposerHistory) *Composer {
	if h == nil {
		h, _ = LoadComposerHistory("")
	}
	c := &Composer{dbg: dbg, history: h, post: fyne.Do}
	c.Method = widget.NewSelectEntry(methods)
	c.URL = widget.NewEntry()
	c.URL.SetPlaceHolder("https://example.com/path")
	c.Headers = NewHeaderTable(nil)
	c.Body = widget.NewMultiLineEntry()
	c.Body.TextStyle.Monospace = true
	c.Result = widget.NewLabel("")
	c.Result.Wrapping = fyne.TextWrapWord
	c.SendBtn = widget.NewButton("Send", c.Send)
	c.SendBtn.Importance = widget.HighImportance

	c.RespStatus = heading("No response yet")
	c.RespStatus.Wrapping = fyne.TextWrapWord
	c.RespHeaders = widget.NewLabel("")
	c.RespHeaders.TextStyle.Monospace = true
	c.RespBody = textList(&c.respRows)

	c.History = lineList(&c.historyEntries, "00:00:00  200  DELETE https://example.com/", historyLine)
	c.History.OnSelected = c.Reopen
	c.refreshHistory()

	form := widget.NewForm(widget.NewFormItem("Method", c.Method), widget.NewFormItem("URL", c.URL))
	reqFields := container.NewVSplit(
		container.NewBorder(heading("Headers"), nil, nil, nil, c.Headers.Content),
		container.NewBorder(heading("Body"), nil, nil, nil, mono(c.Body)))
	reqFields.SetOffset(0.6)
	request := container.NewBorder(container.NewVBox(heading("Request"), form),
		container.NewVBox(capped(c.Result, 3), c.SendBtn), nil, nil, reqFields)
	respFields := container.NewVSplit(
		container.NewBorder(heading("Headers"), nil, nil, nil, container.NewScroll(mono(c.RespHeaders))),
		container.NewBorder(heading("Body"), nil, nil, nil, container.NewPadded(c.RespBody)))
	response := container.NewBorder(container.NewVBox(heading("Response"), capped(c.RespStatus, 2)),
		nil, nil, nil, respFields)
	work := container.NewHSplit(request, response)
	work.SetOffset(0.5)
	hist := container.NewBorder(heading("History"), nil, nil, nil, c.History)
	all := container.NewHSplit(hist, work)
	all.SetOffset(0.2)
	c.Content = all
	c.Load(s)
	return c
}

func historyLine(e ComposerEntry) string {
	res := "…"
	switch {
	case e.Error != "":
		res = "failed"
	case e.Status != 0:
		res = fmt.Sprint(e.Status)
	}
	return fmt.Sprintf("%s  %s  %s %s", e.Sent.Local().Format("15:04:05"), res, e.Method, e.URL)
}

// Load fills the request fields from s (nil: a blank GET request) and clears the response.
func (c *Composer) Load(s *session.Session) {
	c.from = 0
	c.Method.SetText("GET")
	c.URL.SetText("")
	c.Headers.Set(nil)
	c.heldBody = setBody(c.Body, nil)
	c.Result.SetText("")
	if s != nil {
		c.from = s.ID
		c.Method.SetText(s.Request.Method)
		c.URL.SetText(s.Request.URL)
		h := s.Request.Header.Clone()
		h.Del("Content-Length")
		c.Headers.Set(h)
		c.heldBody = setBody(c.Body, s.Request.Body.Data)
		c.Result.SetText(fmt.Sprintf("Editing a copy of #%d; the result is a new session linked to it.", s.ID))
	}
	c.showResponse(nil, "No response yet")
}

// Reopen loads history entry i (newest first) into the request fields and shows its
// response (the stored session's when lookup finds it).
func (c *Composer) Reopen(i int) {
	if i < 0 || i >= len(c.historyEntries) {
		return
	}
	e := c.historyEntries[i]
	c.from = 0
	c.Method.SetText(e.Method)
	c.URL.SetText(e.URL)
	c.Headers.Set(e.Header)
	c.heldBody = setBody(c.Body, []byte(e.Body))
	c.Result.SetText(fmt.Sprintf("Reopened the request sent at %s.", e.Sent.Local().Format("15:04:05")))
	if e.BodyCut {
		c.Result.SetText(c.Result.Text + fmt.Sprintf(" Only the first %d KiB of its body were kept.", HistoryBodyMax>>10))
	}
	switch {
	case e.Error != "":
		c.showResponse(nil, "Failed: "+e.Error)
		return
	case e.ID != 0 && c.lookup != nil:
		if s, err := c.lookup(e.ID); err == nil && s != nil && s.Response != nil {
			c.showResponse(s, "")
			return
		}
	}
	c.showResponse(nil, fmt.Sprintf("#%d → %s (the session is no longer held)", e.ID, statusText(e.Status, e.Reason)))
}

func statusText(code int, reason string) string {
	if reason == "" {
		reason = http.StatusText(code)
	}
	return strings.TrimSpace(fmt.Sprintf("%d %s", code, reason))
}

// showResponse shows s's response, or only a message when s is nil.
func (c *Composer) showResponse(s *session.Session, msg string) {
	if s == nil || s.Response == nil {
		c.RespStatus.SetText(msg)
		c.RespHeaders.SetText("")
		c.setRespBody("")
		return
	}
	r := s.Response
	line := fmt.Sprintf("#%d  %s  %s", s.ID, statusText(r.Status, r.Reason), r.Proto)
	if d := s.Duration(); d > 0 {
		line += "  " + d.Round(time.Millisecond).String()
	}
	if s.Error != nil {
		line += "  ⚠ " + s.Error.Message
	}
	c.RespStatus.SetText(line)
	c.RespHeaders.SetText(render.Headers(r.Header))
	c.setRespBody(responseText(r))
}

func (c *Composer) setRespBody(s string) {
	c.respRows = textRows(s)
	if s == "" {
		c.respRows = nil
	}
	c.RespBody.ScrollToTop()
	c.RespBody.Refresh()
}

// RespBodyText is the response body as shown (its rows joined by line breaks).
func (c *Composer) RespBodyText() string { return strings.Join(c.respRows, "\n") }

// responseText is the response body for reading: decoded, pretty-printed when JSON or
// XML, a hex dump when binary; capped at composerBodyMax.
func responseText(r *session.Response) string {
	data, _, _, err := render.Decode(r.Header, r.Body.Data)
	if err != nil {
		data = r.Body.Data
	}
	if len(data) == 0 {
		if r.Body.Size > 0 {
			return fmt.Sprintf("(%d bytes, not held in memory; open the session to see them)", r.Body.Size)
		}
		return "(no body)"
	}
	ct := r.Header.Get("Content-Type")
	kind := render.Classify(ct, data)
	if kind == render.KindBinary || kind == render.KindImage {
		return render.Hex(data, composerBodyMax/4)
	}
	if len(data) > composerBodyMax {
		return render.Text(ct, data[:composerBodyMax]) + fmt.Sprintf("\n… %d more bytes not shown (open the session to see them all)", len(data)-composerBodyMax)
	}
	txt, _ := render.Pretty(kind, ct, data)
	out := render.Cap(txt, composerBodyMax)
	if r.Body.Truncated {
		out += "\n… the capture kept only the first part of this body"
	}
	return out
}

func (c *Composer) refreshHistory() {
	c.historyEntries = c.history.Entries()
	c.History.UnselectAll()
	c.History.Refresh()
}

// Request builds the request from the fields.
func (c *Composer) Request(ctx context.Context) (*http.Request, error) {
	h, err := c.Headers.Header()
	if err != nil {
		return nil, err
	}
	b := bodyOf(c.Body, c.heldBody)
	s := &session.Session{ID: c.from, Request: session.Request{Method: strings.TrimSpace(c.Method.Text),
		URL: strings.TrimSpace(c.URL.Text), Header: h, Body: session.Body{Data: b, Size: int64(len(b))}}}
	return replay.Request(ctx, s, nil)
}

// Send sends the request on a background goroutine; the response, the history and
// onSent are updated on the UI goroutine.
func (c *Composer) Send() {
	req, err := c.Request(context.Background())
	if err != nil {
		c.Result.SetText("⚠ " + err.Error())
		return
	}
	entry := ComposerEntry{Sent: time.Now(), Method: req.Method, URL: strings.TrimSpace(c.URL.Text), Body: string(bodyOf(c.Body, c.heldBody))}
	entry.Header, _ = c.Headers.Header()
	c.SendBtn.Disable()
	c.Result.SetText("Sending…")
	c.showResponse(nil, "Waiting for the response…")
	from := c.from
	go func() {
		s, err := c.dbg.Send(context.Background(), req, engine.SendOptions{ReplayOf: from})
		c.post(func() {
			c.SendBtn.Enable()
			switch {
			case s == nil && err != nil:
				entry.Error = err.Error()
				c.Result.SetText("⚠ " + err.Error())
				c.showResponse(nil, "No response: "+err.Error())
			case s.Error != nil:
				entry.ID, entry.Error = s.ID, s.Error.Message
				c.Result.SetText(fmt.Sprintf("#%d failed: %s", s.ID, s.Error.Message))
				c.showResponse(s, fmt.Sprintf("#%d failed: %s", s.ID, s.Error.Message))
			default:
				entry.ID, entry.Status = s.ID, s.Status()
				if s.Response != nil {
					entry.Reason = s.Response.Reason
				}
				c.Result.SetText(fmt.Sprintf("#%d → %d", s.ID, s.Status()))
				c.showResponse(s, "")
			}
			if err := c.history.Add(entry); err != nil {
				c.Result.SetText(c.Result.Text + " (history not saved: " + err.Error() + ")")
			}
			c.refreshHistory()
			if s != nil && c.onSent != nil {
				c.onSent(s)
			}
		})
	}()
}
