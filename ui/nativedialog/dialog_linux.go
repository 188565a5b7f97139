package nativedialog

import (
	"context"
	"errors"
	"os"
	"strings"
)

// open tries the desktop portal, then zenity and kdialog (kdialog first on KDE).
func open(ctx context.Context, o Options) (string, error) {
	p, err := portalOpen(ctx, o)
	if !errors.Is(err, ErrUnavailable) {
		return p, err
	}
	for _, t := range linuxTools() {
		p, err := t.run(ctx, o)
		if !errors.Is(err, ErrUnavailable) {
			return p, err
		}
	}
	return "", ErrUnavailable
}

func available() bool {
	if portalAvailable() {
		return true
	}
	for _, t := range linuxTools() {
		if t.usable() {
			return true
		}
	}
	return false
}

// linuxTools are the dialog programs tried after the portal, in order.
func linuxTools() []tool {
	if strings.Contains(strings.ToUpper(os.Getenv("XDG_CURRENT_DESKTOP")), "KDE") {
		return []tool{kdialog, zenity}
	}
	return []tool{zenity, kdialog}
}
