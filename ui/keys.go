package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// closeKeys makes Ctrl+W (Cmd+W) close a secondary window, and Esc too when esc is set
// and no field has the keyboard (an entry keeps Esc for itself). The main window keeps
// Esc for the filter and has no Ctrl+W.
func closeKeys(w fyne.Window, esc bool) {
	c := w.Canvas()
	c.AddShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyW, Modifier: fyne.KeyModifierShortcutDefault}, func(fyne.Shortcut) { w.Close() })
	if !esc {
		return
	}
	prev := c.OnTypedKey()
	c.SetOnTypedKey(func(e *fyne.KeyEvent) {
		if e.Name == fyne.KeyEscape {
			w.Close()
			return
		}
		if prev != nil {
			prev(e)
		}
	})
}

// confirm asks a yes/no question in a dialog over win whose Enter answers yes (the
// highlighted button) and Esc no; yes runs f.
func confirm(win fyne.Window, title, msg, yes string, f func()) *dialog.ConfirmDialog {
	c := win.Canvas()
	prev := c.OnTypedKey()
	done := false
	d := dialog.NewConfirm(title, msg, func(ok bool) {
		if done {
			return
		}
		done = true
		c.SetOnTypedKey(prev)
		if ok {
			f()
		}
	}, win)
	d.SetConfirmText(yes)
	d.SetConfirmImportance(widget.DangerImportance)
	c.SetOnTypedKey(func(e *fyne.KeyEvent) {
		switch e.Name {
		case fyne.KeyReturn, fyne.KeyEnter:
			d.Confirm()
		case fyne.KeyEscape:
			d.Hide()
		default:
			if prev != nil {
				prev(e)
			}
		}
	})
	d.Show()
	// The list (or an entry) would keep the keyboard, and take Enter, behind the dialog.
	c.Unfocus()
	return d
}

// capped keeps a word-wrapped label from asking for more than lines of text in height.
// Before its first layout (width 0) Fyne measures a wrapped label one word per line, and
// a window opened on such a label grew to fit it: the Breakpoints window opened
// 1100×2048, its list and form off-screen.
func capped(l *widget.Label, lines int) *fyne.Container {
	return container.New(&capLayout{lines: lines}, l)
}

type capLayout struct{ lines int }

func (c *capLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	o := objs[0]
	if !o.Visible() {
		return fyne.Size{}
	}
	m := o.MinSize()
	line := fyne.MeasureText("Mg", theme.TextSize(), fyne.TextStyle{}).Height + theme.LineSpacing()
	return fyne.NewSize(m.Width, min(m.Height, float32(c.lines)*line+2*theme.InnerPadding()))
}

func (c *capLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	for _, o := range objs {
		o.Move(fyne.NewPos(0, 0))
		o.Resize(size)
	}
}
