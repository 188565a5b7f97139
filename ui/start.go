package ui

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// startPage is the "Start here" controller: shown instead of the empty list, it says
// where to point a client, the CA's state with one-click trust, the CA file and its
// fingerprint, per-client steps and the system-proxy switch.
type startPage struct {
	u        *UI
	addr     *widget.Label
	caState  *widget.Label
	fp       *widget.Label
	trust    *widget.Button
	proxy    *widget.Check
	proxyMsg *widget.Label
	steps    *widget.Label
	phones   *widget.Label
	auth     *widget.Label
	authRow  *fyne.Container
	qr       *canvas.Image
	box      *fyne.Container
	// scroll is the page as placed in the window, over the list in one stack: it is what
	// shows and hides. (Hiding only the box left an empty scroller over the list, which
	// took the list's wheel and scrollbar drags.)
	scroll  *container.Scroll
	syncing bool
}

func newStartPage(u *UI) *startPage {
	p := &startPage{u: u, addr: widget.NewLabel(""), caState: widget.NewLabel(""), fp: widget.NewLabel(""),
		proxyMsg: widget.NewLabel(""), steps: widget.NewLabel(""), phones: widget.NewLabel(""), auth: widget.NewLabel("")}
	p.phones.Wrapping = fyne.TextWrapWord
	p.qr = canvas.NewImageFromImage(nil)
	p.qr.FillMode = canvas.ImageFillContain
	p.qr.ScaleMode = canvas.ImageScalePixels
	p.qr.SetMinSize(fyne.NewSize(132, 132))
	p.qr.Hide()
	p.addr.TextStyle = fyne.TextStyle{Monospace: true, Bold: true}
	p.fp.TextStyle = fyne.TextStyle{Monospace: true}
	p.fp.Wrapping = fyne.TextWrapBreak
	p.steps.TextStyle = fyne.TextStyle{Monospace: true}
	p.caState.Wrapping = fyne.TextWrapWord
	p.proxyMsg.Wrapping = fyne.TextWrapWord
	copyAddr := widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() { u.copyText("proxy address", p.proxyAddr()) })
	p.trust = widget.NewButtonWithIcon("Trust the CA", theme.ConfirmIcon(), p.trustCA)
	p.trust.Importance = widget.HighImportance
	saveCA := widget.NewButtonWithIcon("Save CA file…", theme.DocumentSaveIcon(), p.saveCA)
	p.proxy = widget.NewCheck("Use Inspector as the system proxy (browsers and most apps)", p.setProxy)

	p.auth.TextStyle = fyne.TextStyle{Monospace: true}
	copyAuth := widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() { u.copyText("proxy credentials", u.deps.ProxyAuth) })
	p.authRow = container.NewHBox(widget.NewLabel("Proxy credentials"), container.NewThemeOverride(p.auth, &monoTheme{}), copyAuth)
	p.authRow.Hide()

	heading := widget.NewLabelWithStyle("Start here: point a client at Inspector", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	p.box = container.NewVBox(
		heading,
		container.NewHBox(widget.NewLabel("Proxy address"), container.NewThemeOverride(p.addr, &monoTheme{}), copyAddr),
		p.authRow,
		widget.NewSeparator(),
		container.NewHBox(widget.NewLabel("Root CA"), p.trust, saveCA),
		p.caState,
		container.NewThemeOverride(p.fp, &monoTheme{}),
		widget.NewSeparator(),
		p.proxy,
		p.proxyMsg,
		widget.NewSeparator(),
		widget.NewLabelWithStyle("Per client", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		container.NewThemeOverride(p.steps, &monoTheme{}),
		container.NewBorder(nil, nil, p.qr, nil, p.phones),
	)
	p.scroll = container.NewVScroll(container.NewPadded(p.box))
	p.refresh()
	return p
}

func (p *startPage) object() fyne.CanvasObject { return p.scroll }

func (p *startPage) show() {
	if !p.scroll.Visible() {
		p.refresh()
	}
	p.scroll.Show()
}

func (p *startPage) hide() { p.scroll.Hide() }

// Visible reports whether the start page is shown (for tests).
func (p *startPage) Visible() bool { return p.scroll.Visible() }

// proxyAddr is the address local clients use: the listener's, with an unspecified host
// ("[::]", "0.0.0.0") replaced by 127.0.0.1.
func (p *startPage) proxyAddr() string {
	e := p.u.deps.Engine
	if e == nil {
		return ""
	}
	addr := e.Addr()
	if host, port, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			return net.JoinHostPort("127.0.0.1", port)
		}
	}
	return addr
}

// listenAddr is the listener's own address ("" without a proxy).
func (p *startPage) listenAddr() string {
	if e := p.u.deps.Engine; e != nil {
		return e.Addr()
	}
	return ""
}

// CAFingerprint is the SHA-256 fingerprint of a PEM certificate, colon-separated hex.
func CAFingerprint(pemBytes []byte) (string, error) {
	blk, _ := pem.Decode(pemBytes)
	if blk == nil {
		return "", fmt.Errorf("the CA file is not PEM")
	}
	if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
		return "", fmt.Errorf("the CA certificate does not parse: %w", err)
	}
	sum := sha256.Sum256(blk.Bytes)
	hexs := make([]string, len(sum))
	for i, b := range sum {
		hexs[i] = fmt.Sprintf("%02X", b)
	}
	return strings.Join(hexs, ":"), nil
}

// Steps is the per-client set-up text for a proxy address, the CA file path, the
// listener's LAN addresses (--allow-remote; nil on loopback) and the proxy credentials
// ("user:password", "" for none).
func Steps(addr, caPath string, lan []string, auth string) string {
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	if caPath == "" {
		caPath = "inspector-ca.pem"
	}
	proxyURL := "http://" + addr
	if auth != "" {
		proxyURL = "http://" + auth + "@" + addr
	}
	phone := "(phones need --allow-remote and this machine's LAN address instead of 127.0.0.1)"
	remote := addr
	if len(lan) > 0 {
		remote = lan[0]
		phone = "(phones and other machines use " + strings.Join(lan, " or ") + ")"
	}
	javaAuth := ""
	if u, pw, ok := strings.Cut(auth, ":"); ok {
		javaAuth = " -Dhttps.proxyUser=" + u + " -Dhttps.proxyPassword=" + pw
	}
	lines := []string{
		"Browsers   turn on the system proxy above (Firefox: Settings ▸ Network ▸ use system proxy)",
		"curl       curl -x " + proxyURL + " --cacert " + caPath + " https://example.com",
		"Node       HTTPS_PROXY=" + proxyURL + " NODE_EXTRA_CA_CERTS=" + caPath + " node app.js",
		"Python     HTTPS_PROXY=" + proxyURL + " REQUESTS_CA_BUNDLE=" + caPath + " python app.py",
		"Java       -Dhttps.proxyHost=" + hostOf(addr) + " -Dhttps.proxyPort=" + portOf(addr) + javaAuth,
		"           keytool -importcert -alias inspector -file " + caPath + " -cacerts",
		"Android    Wi-Fi ▸ proxy " + remote + ", then open http://inspector.cert/ and install the CA",
		"iOS        Wi-Fi ▸ Configure proxy " + remote + ", open http://inspector.cert/, then trust it",
		"           in Settings ▸ General ▸ About ▸ Certificate Trust Settings",
	}
	if auth != "" {
		lines = append(lines, "           the proxy asks for a user name and password: "+strings.Replace(auth, ":", " / ", 1))
	}
	return strings.Join(append(lines, phone), "\n")
}

func hostOf(addr string) string {
	if i := strings.LastIndex(addr, ":"); i >= 0 {
		return addr[:i]
	}
	return addr
}

func portOf(addr string) string {
	if i := strings.LastIndex(addr, ":"); i >= 0 {
		return addr[i+1:]
	}
	return ""
}

// prefCAFile is where the user last saved the CA certificate (Save CA file…).
const prefCAFile = "start.ca.file"

// caFile is the CA certificate file the steps name: the copy the user saved last while it
// still exists, else the instance's own (DATA-DIR/ca/root.pem).
func (p *startPage) caFile() string {
	if f := p.u.prefs.String(prefCAFile); f != "" {
		if _, err := os.Stat(f); err == nil {
			return f
		}
	}
	return p.u.deps.CAPath
}

// saveCAPath is where Save CA file… proposes to write: the last copy, else the home
// folder.
func (p *startPage) saveCAPath() string {
	if f := p.u.prefs.String(prefCAFile); f != "" {
		return f
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, "inspector-ca.pem")
}

// refresh re-reads the CA and proxy state.
func (p *startPage) refresh() {
	addr := p.proxyAddr()
	if addr == "" {
		p.addr.SetText("no proxy running (viewer)")
	} else {
		p.addr.SetText(addr)
	}
	p.fp.SetText("")
	if p.u.deps.CA != nil {
		if fp, err := CAFingerprint(p.u.deps.CA()); err != nil {
			p.fp.SetText("CA: " + err.Error())
		} else {
			p.fp.SetText("SHA-256 " + fp)
		}
	}
	lan := lanProxyAddrs(p.listenAddr())
	if len(lan) > 0 {
		p.addr.SetText(addr + "   LAN " + strings.Join(lan, ", "))
	}
	p.steps.SetText(Steps(addr, p.caFile(), lan, p.u.deps.ProxyAuth))
	if a := p.u.deps.ProxyAuth; a != "" {
		p.auth.SetText(a)
		p.authRow.Show()
	} else {
		p.authRow.Hide()
	}
	p.phones.SetText(phoneSteps(lan))
	p.qr.Hide()
	if len(lan) > 0 {
		if img, err := qrImage(certPageURL, 132); err == nil {
			p.qr.Image = img
			p.qr.Refresh()
			p.qr.Show()
		}
	}
	o := p.u.deps.OS
	if o == nil {
		p.caState.SetText("Trusting the CA from here is not available in this build: save the CA file and install it by hand.")
		p.trust.Disable()
		p.proxy.Disable()
		p.proxyMsg.SetText("System proxy control is not available in this build.")
		return
	}
	trusted, detail, err := o.CAStatus()
	switch {
	case err != nil:
		p.caState.SetText("Could not read whether the CA is trusted: " + err.Error())
	case trusted:
		p.caState.SetText("The CA is trusted (" + detail + "): HTTPS is decrypted for clients that use the system store.")
		p.trust.SetText("Trusted")
		p.trust.Disable()
	default:
		p.caState.SetText("The CA is not trusted yet: HTTPS clients will refuse Inspector's certificates until you trust it.")
		p.trust.SetText("Trust the CA")
		p.trust.Enable()
	}
	on, pdetail, err := o.ProxyStatus()
	p.syncing = true
	p.proxy.SetChecked(err == nil && on)
	p.syncing = false
	switch {
	case err != nil:
		p.proxyMsg.SetText("Could not read the system proxy: " + err.Error())
	case on:
		p.proxyMsg.SetText("The system proxy points at Inspector (" + pdetail + ").")
	default:
		p.proxyMsg.SetText("The system proxy does not point at Inspector.")
	}
}

func (p *startPage) trustCA() {
	o := p.u.deps.OS
	if o == nil {
		return
	}
	p.run("Trust the CA", o.InstallCA, "The Inspector root CA was added to this system's trust store; HTTPS traffic through Inspector is now decrypted without warnings.")
}

func (p *startPage) setProxy(on bool) {
	o := p.u.deps.OS
	if o == nil || p.syncing {
		return
	}
	if on {
		addr := p.proxyAddr()
		p.run("System proxy", func() error { return o.EnableProxy(addr) }, "The system proxy now points at Inspector ("+addr+"); the previous setting is restored when you turn this off.")
	} else {
		p.run("System proxy", o.DisableProxy, "The system proxy was restored to what it was before Inspector changed it.")
	}
}

// run does a slow OS call off the UI goroutine and says in words what it did.
func (p *startPage) run(title string, f func() error, done string) {
	go func() {
		err := f()
		p.u.post(func() {
			if err != nil {
				dialog.ShowError(fmt.Errorf("%s failed: %w", title, err), p.u.win)
			} else {
				dialog.ShowInformation(title, done, p.u.win)
			}
			p.refresh()
			p.u.status.refreshOS()
		})
	}()
}

// saveCA writes the CA certificate (PEM) to a file the user names.
func (p *startPage) saveCA() {
	if p.u.deps.CA == nil {
		dialog.ShowInformation("Save CA file", "The CA is not available in this window.", p.u.win)
		return
	}
	p.u.pathDialog("Save the CA certificate", "Save", p.saveCAPath(), true, func(path string) {
		if err := p.u.SaveCAFile(path); err != nil {
			dialog.ShowError(err, p.u.win)
			return
		}
		p.u.prefs.SetString(prefCAFile, path)
		p.refresh()
		dialog.ShowInformation("Save CA file", "Saved the Inspector root CA certificate (PEM) to "+path+
			".\nGive this file to clients that do not use the system trust store (see the steps).", p.u.win)
	})
}

// SaveCAFile writes the CA certificate (PEM) to path.
func (u *UI) SaveCAFile(path string) error {
	if u.deps.CA == nil {
		return fmt.Errorf("the CA is not available")
	}
	return os.WriteFile(path, u.deps.CA(), 0o644)
}

// showSetup opens the start page's content in a dialog (Help ▸ Set up a client).
func (u *UI) showSetup() {
	p := newStartPage(u)
	d := dialog.NewCustom("Set up a client", "Close", p.scroll, u.win)
	d.Resize(fyne.NewSize(820, 600))
	d.Show()
}
