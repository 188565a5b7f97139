package ui

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
)

// Density is how tightly the window packs its widgets.
type Density int

// Densities offered in View ▸ Density.
const (
	Compact     Density = iota // 13 px text, tight padding: the default
	Comfortable                // Fyne's own sizes
)

// ThemeMode picks the colour variant.
type ThemeMode int

// Theme modes offered in View ▸ Theme.
const (
	ThemeSystem ThemeMode = iota // follow the operating system
	ThemeLight
	ThemeDark
)

var (
	densityNames = []string{"compact", "comfortable"}
	themeNames   = []string{"system", "light", "dark"}
)

// appTheme is Fyne's default theme with Inspector's density and a forced variant.
type appTheme struct {
	density Density
	mode    ThemeMode
}

func (t *appTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	switch t.mode {
	case ThemeLight:
		v = theme.VariantLight
	case ThemeDark:
		v = theme.VariantDark
	}
	if n == theme.ColorNameSuccess && v == theme.VariantLight {
		return lightSuccess
	}
	return theme.DefaultTheme().Color(n, v)
}

// lightSuccess is the success colour (a 2xx status, JSON strings) on the light
// background: Fyne's lime has a contrast of 1.4:1 on white; this green has 5.0:1.
var lightSuccess = color.NRGBA{0x1a, 0x80, 0x34, 0xff}

func (t *appTheme) Font(s fyne.TextStyle) fyne.Resource     { return theme.DefaultTheme().Font(s) }
func (t *appTheme) Icon(n fyne.ThemeIconName) fyne.Resource { return theme.DefaultTheme().Icon(n) }

// compactSizes are the sizes that differ from Fyne's in the compact density.
var compactSizes = map[fyne.ThemeSizeName]float32{
	theme.SizeNameText:               13,
	theme.SizeNamePadding:            2,
	theme.SizeNameInnerPadding:       4,
	theme.SizeNameLineSpacing:        3,
	theme.SizeNameInlineIcon:         16,
	theme.SizeNameScrollBar:          10,
	theme.SizeNameScrollBarSmall:     3,
	theme.SizeNameSeparatorThickness: 1,
	theme.SizeNameInputBorder:        1,
	theme.SizeNameHeadingText:        18,
	theme.SizeNameSubHeadingText:     15,
	theme.SizeNameCaptionText:        11,
}

func (t *appTheme) Size(n fyne.ThemeSizeName) float32 {
	if t.density == Compact {
		if s, ok := compactSizes[n]; ok {
			return s
		}
	}
	return theme.DefaultTheme().Size(n)
}

// SetDensity switches the density and persists it.
func (u *UI) SetDensity(d Density) {
	if d != Compact && d != Comfortable {
		d = Compact
	}
	u.theme.density = d
	u.prefs.SetString(prefDensity, densityNames[d])
	u.applyTheme()
}

// SetThemeMode switches light / dark / system and persists it.
func (u *UI) SetThemeMode(m ThemeMode) {
	if m < ThemeSystem || m > ThemeDark {
		m = ThemeSystem
	}
	u.theme.mode = m
	u.prefs.SetString(prefTheme, themeNames[m])
	u.applyTheme()
}

// applyTheme installs a fresh copy of the theme (Fyne redraws on a new theme value).
func (u *UI) applyTheme() {
	th := *u.theme
	u.theme = &th
	u.app.Settings().SetTheme(u.theme)
	if u.menus != nil {
		u.menus.refreshChecks()
	}
	if u.list != nil {
		u.list.themeChanged()
	}
}

func (u *UI) loadTheme() {
	u.theme = &appTheme{}
	for i, n := range densityNames {
		if u.prefs.String(prefDensity) == n {
			u.theme.density = Density(i)
		}
	}
	for i, n := range themeNames {
		if u.prefs.String(prefTheme) == n {
			u.theme.mode = ThemeMode(i)
		}
	}
	u.app.Settings().SetTheme(u.theme)
}

// monoSize is the size of monospace text in the compact density: at 13 px the monospace
// face loses its underscores in the GL painter, so monospace text is drawn at 14.
func monoSize() float32 { return max(theme.TextSize(), 14) }

// mono draws o (monospace text: an entry, a label) at monoSize, where its underscores
// show.
func mono(o fyne.CanvasObject) fyne.CanvasObject {
	return container.NewThemeOverride(o, &monoTheme{})
}

// monoTheme is the app's theme with the text size of monospace content (monoSize).
type monoTheme struct{ packedTheme }

func (monoTheme) Size(n fyne.ThemeSizeName) float32 {
	s := fyne.CurrentApp().Settings().Theme().Size(n)
	if n == theme.SizeNameText {
		return max(s, 14)
	}
	return s
}
