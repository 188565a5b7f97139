package ui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// MCPEvent is one MCP tool call an agent made.
type MCPEvent struct {
	Time                 time.Time
	Client, Tool, Detail string
}

// MCP is the instance's MCP endpoint as the window sees it: what agents did, and whether
// new MCP sessions get the tools that change things.
type MCP interface {
	Activity() []MCPEvent // oldest first
	WritesAllowed() bool
	SetWritesAllowed(on bool)
	// RedactAnswers says answers go out with secrets masked (on by default); the switch
	// is saved.
	RedactAnswers() bool
	SetRedactAnswers(on bool) error
}

// MCPClientCommand is the command line an MCP client (an AI agent) is configured with.
const MCPClientCommand = "inspector mcp --allow-writes"

// mcpPanel is Tools ▸ MCP…: the activity log, the clients seen, how to configure a
// client, and the switch for write tools.
type mcpPanel struct {
	u       *UI
	win     fyne.Window
	events  []MCPEvent
	table   *widget.Table
	clients *widget.Label
	writes  *widget.Check
	redact  *widget.Check
}

func (u *UI) showMCP() *mcpPanel {
	if u.deps.MCP == nil {
		dialog.ShowInformation("MCP", "MCP is not available in this window (no proxy running).", u.win)
		return nil
	}
	if u.mcp != nil {
		u.mcp.win.RequestFocus()
		return u.mcp
	}
	p := &mcpPanel{u: u, clients: widget.NewLabel("")}
	p.clients.Wrapping = fyne.TextWrapWord
	cols := []string{"Time", "Client", "Tool", "Detail"}
	widths := []float32{90, 160, 160, 420}
	p.table = widget.NewTable(func() (int, int) { return len(p.events), len(cols) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(id widget.TableCellID, o fyne.CanvasObject) {
			o.(*widget.Label).SetText(mcpCell(p.events[len(p.events)-1-id.Row], id.Col)) // newest first
		})
	p.table.ShowHeaderRow = true
	p.table.CreateHeader = func() fyne.CanvasObject {
		return widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	}
	p.table.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) { o.(*widget.Label).SetText(cols[id.Col]) }
	for i, w := range widths {
		p.table.SetColumnWidth(i, w)
	}
	p.writes = widget.NewCheck("Allow MCP clients to change things (breakpoints, replay, send, rules)", func(on bool) {
		u.deps.MCP.SetWritesAllowed(on)
		if on {
			u.notify("MCP: new sessions may change things")
		} else {
			u.notify("MCP: new sessions are read-only")
		}
	})
	p.writes.Checked = u.deps.MCP.WritesAllowed()
	p.redact = widget.NewCheck("Mask secrets in answers (tokens, cookies, passwords; the redaction rules)", func(on bool) {
		if on == u.deps.MCP.RedactAnswers() {
			return
		}
		if err := u.deps.MCP.SetRedactAnswers(on); err != nil {
			dialog.ShowError(err, u.win)
			return
		}
		if on {
			u.notify("MCP: answers mask secrets")
		} else {
			u.notify("MCP: answers carry secrets unmasked")
		}
	})
	p.redact.Checked = u.deps.MCP.RedactAnswers()
	cmd := widget.NewEntry()
	cmd.SetText(MCPClientCommand)
	copyBtn := widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() { u.copyText("the MCP command", MCPClientCommand) })
	note := widget.NewLabel("Configure an MCP client (an AI agent) to run this command; it talks to this instance. " +
		"The switch takes effect for MCP sessions that start after it is changed on /api/v1/mcp.")
	note.Wrapping = fyne.TextWrapWord
	top := container.NewVBox(
		widget.NewLabelWithStyle("Client command", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		container.NewBorder(nil, nil, nil, copyBtn, cmd), note, p.writes, p.redact, widget.NewSeparator(), p.clients)
	u.mcp = p
	p.win = u.liveWindow("MCP", fyne.NewSize(900, 600), container.NewBorder(top, nil, nil, nil, p.table), p.refresh,
		func() { u.mcp = nil })
	return p
}

func mcpCell(e MCPEvent, col int) string {
	switch col {
	case 0:
		return e.Time.Local().Format("15:04:05")
	case 1:
		return e.Client
	case 2:
		return e.Tool
	}
	return e.Detail
}

// refresh reads the activity again.
func (p *mcpPanel) refresh() {
	p.events = p.u.deps.MCP.Activity()
	p.table.Refresh()
	last := map[string]time.Time{}
	for _, e := range p.events {
		last[e.Client] = e.Time
	}
	names := make([]string, 0, len(last))
	for n := range last {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) == 0 {
		p.clients.SetText("No MCP client has called a tool yet.")
		return
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s (last %s)", n, last[n].Local().Format("15:04:05"))
	}
	p.clients.SetText("Clients seen: " + strings.Join(parts, ", "))
	p.writes.SetChecked(p.u.deps.MCP.WritesAllowed())
	p.redact.SetChecked(p.u.deps.MCP.RedactAnswers())
}
