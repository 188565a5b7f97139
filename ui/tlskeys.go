package ui

import (
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"inspector/engine/session"
)

// TLSKeys is the instance's TLS key log as the window sees it: the switch (Tools ▸ TLS
// key log…, the same writer as --keylog) and a session's own secrets (its TLS tab's Copy
// TLS keys). The secrets live in the engine's memory only; they are never stored with a
// session, so no HAR, export or MCP answer carries them.
type TLSKeys interface {
	// SessionKeys returns the NSS key-log lines of a session's client leg and upstream
	// leg (nil when not known: no TLS, HTTP/3, or older than the in-memory table).
	SessionKeys(id session.ID) (client, upstream []string)
	// KeyLogFile is the file the key log goes to ("": off).
	KeyLogFile() string
	// SetKeyLogFile switches the key log to path (created 0600, appended), or off for "".
	SetKeyLogFile(path string) error
}

// tlsKeysBar is the TLS tab's row of actions: Copy TLS keys.
func (u *UI) tlsKeysBar() fyne.CanvasObject {
	b := widget.NewButtonWithIcon("Copy TLS keys", theme.ContentCopyIcon(), func() { u.CopyTLSKeys() })
	b.Importance = widget.LowImportance
	if u.deps.TLSKeys == nil {
		b.Disable()
	}
	return container.NewHBox(b)
}

// CopyTLSKeys puts the shown session's key-log lines (both legs) on the clipboard, in
// the SSLKEYLOGFILE format Wireshark reads.
func (u *UI) CopyTLSKeys() {
	s := u.detail.cur
	if u.deps.TLSKeys == nil || s == nil {
		return
	}
	text, n := sessionKeysText(u.deps.TLSKeys, s.ID)
	if n == 0 {
		u.notify(fmt.Sprintf("No TLS keys for #%d (no TLS, HTTP/3, a session from before this run, or older than the keys kept in memory)", s.ID))
		return
	}
	u.copyText(fmt.Sprintf("the TLS keys of #%d (%d lines)", s.ID, n), text)
}

// sessionKeysText is a session's key-log lines with a comment naming each leg.
func sessionKeysText(k TLSKeys, id session.ID) (string, int) {
	c, up := k.SessionKeys(id)
	var sb strings.Builder
	if len(c) > 0 {
		fmt.Fprintf(&sb, "# session %d, client leg (Inspector as the server)\n", id)
		sb.WriteString(strings.Join(c, ""))
	}
	if len(up) > 0 {
		fmt.Fprintf(&sb, "# session %d, upstream leg (Inspector as the client)\n", id)
		sb.WriteString(strings.Join(up, ""))
	}
	return sb.String(), len(c) + len(up)
}

// keyLogPanel is Tools ▸ TLS key log…: the file and the switch.
type keyLogPanel struct {
	win  fyne.Window
	path *widget.Entry
	on   *widget.Check
	note *widget.Label
}

func (u *UI) showKeyLog() *keyLogPanel {
	k := u.deps.TLSKeys
	if k == nil {
		dialog.ShowInformation("TLS key log", "The TLS key log is not available in this window (no proxy running).", u.win)
		return nil
	}
	p := &keyLogPanel{path: widget.NewEntry(), note: widget.NewLabel("")}
	p.note.Wrapping = fyne.TextWrapWord
	p.path.SetPlaceHolder("/path/to/sslkeys.log")
	p.path.SetText(k.KeyLogFile())
	p.on = widget.NewCheck("Write the TLS secrets of both legs to this file", nil)
	p.on.Checked = k.KeyLogFile() != ""
	p.on.OnChanged = func(on bool) {
		path := ""
		if on {
			path = strings.TrimSpace(p.path.Text)
			if path == "" {
				p.note.SetText("Choose a file first.")
				p.on.Checked = false
				p.on.Refresh()
				return
			}
		}
		if err := k.SetKeyLogFile(path); err != nil {
			p.note.SetText(err.Error())
			p.on.Checked = k.KeyLogFile() != ""
			p.on.Refresh()
			return
		}
		if on {
			p.note.SetText("Writing NSS key-log lines to " + path + ". In Wireshark: Preferences ▸ Protocols ▸ TLS ▸ (Pre)-Master-Secret log filename.")
			u.notify("TLS key log: " + path)
		} else {
			p.note.SetText("The key log is off.")
			u.notify("TLS key log off")
		}
	}
	choose := widget.NewButton("Choose…", func() {
		d := dialog.NewFileSave(func(w fyne.URIWriteCloser, err error) {
			if err != nil || w == nil {
				return
			}
			w.Close()
			p.path.SetText(w.URI().Path())
		}, p.win)
		d.SetFileName("sslkeys.log")
		d.Show()
	})
	intro := widget.NewLabel("The key log lets Wireshark or tshark decrypt a packet capture of both legs: the client's " +
		"connection to Inspector and Inspector's connection to the origin (the same lines as --keylog FILE or $SSLKEYLOGFILE). " +
		"Anyone with the file can decrypt those captures; keep it private.")
	intro.Wrapping = fyne.TextWrapWord
	p.win = u.app.NewWindow("TLS key log")
	p.win.SetContent(container.NewPadded(container.NewVBox(intro,
		container.NewBorder(nil, nil, widget.NewLabel("File"), choose, p.path), p.on, p.note)))
	p.win.Resize(fyne.NewSize(620, 260))
	closeKeys(p.win, true)
	p.win.Show()
	return p
}
