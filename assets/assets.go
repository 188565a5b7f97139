// Package assets holds Inspector's bundled resources: the application icon (also used by
// FyneApp.toml for packaging).
package assets

import (
	_ "embed"

	"fyne.io/fyne/v2"
)

//go:embed icon.png
var iconPNG []byte

// Icon is the application icon (256×256 PNG).
var Icon = fyne.NewStaticResource("icon.png", iconPNG)
