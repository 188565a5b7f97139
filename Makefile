# Inspector. `make run` starts the app, `make test` runs every test; each installs what it
# needs first (Debian/Ubuntu packages through apt-get, Go modules through the module proxy).

GO        ?= go
TAGS      := migrated_fynedo
BIN       := inspector
# Core packages: everything but the Fyne side (ui/, cmd/), listed when used (new top-level
# packages are covered without editing this line); they build with CGO_ENABLED=0.
CORE       = $(shell $(GO) list ./... | grep -v -e '^inspector/ui' -e '^inspector/cmd/' -e '^inspector/assets' -e '^inspector/docs/')
export LANG ?= C.UTF-8

# Debian packages: Fyne's cgo build (GL, X11), tests' tools (curl, NSS certutil, gsettings,
# Firefox ESR and Chromium for the browser tests in cmd/inspector and engine), screenshots (Xvfb, ImageMagick).
APT_PKGS  := gcc libgl1-mesa-dev xorg-dev curl ca-certificates libnss3-tools libglib2.0-bin \
             gsettings-desktop-schemas xvfb xdotool imagemagick firefox-esr chromium
# Copy as code (codegen): the runtimes its round-trip tests run snippets with
# (curl above; Go is on PATH; C# on Mono; Rust with rustc against a stand-in for reqwest,
# which cannot be fetched offline; PowerShell is not packaged).
APT_PKGS  += wget httpie python3-requests python3-httpx nodejs default-jdk-headless php-cli php-curl \
             mono-mcs mono-runtime libmono-system-net-http4.0-cil rustc
# Native file dialogs (ui/nativedialog): a private session bus for the desktop-portal tests.
APT_PKGS  += dbus-daemon
# TLS key log (--keylog): tshark decrypts a loopback capture with it (cmd/inspector).
APT_PKGS  += tshark
# The frozen-disk test (store): an ext4 image loop-mounted and frozen with fsfreeze.
APT_PKGS  += e2fsprogs util-linux mount

# npm packages the tests use (not part of the product).
NPM_TOOLS := .cache/npm-tools

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps build run headless test fmt-check test-core test-ui test-window cross bench fuzz fuzz-short h2spec screenshots package package-tarxz clean \
        windows-deps windows-exe test-windows test-dialogs-windows test-windows-if-possible test-firefox package-deb package-windows

all: build

deps:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi
	@$(GO) mod download
	@# An independent OpenAPI validator for the contract tests (contract/npm_test.go).
	@if command -v npm >/dev/null 2>&1 && [ ! -d $(NPM_TOOLS)/node_modules/@apidevtools/swagger-parser ]; then \
	  npm install --no-audit --no-fund --silent --prefix $(NPM_TOOLS) @apidevtools/swagger-parser@13.1.0; fi

build: deps
	$(GO) build -tags $(TAGS) -o $(BIN) ./cmd/inspector

run: build
	./$(BIN)

headless: build
	./$(BIN) --headless

# Core packages: no cgo, race detector on (it needs cgo itself, so CGO is left on).
test-core:
	$(GO) vet $(CORE)
	$(GO) test -race -count=1 -timeout 15m $(CORE)

# The cgo/Fyne side: UI and the command (end-to-end tests build and run the real binary).
# The real-window test runs in test-window, alone.
test-ui:
	$(GO) vet -tags $(TAGS) ./ui/... ./cmd/...
	$(GO) test -tags $(TAGS) -count=1 -timeout 20m -skip '^TestRealWindow$$' ./ui/... ./cmd/...

# The built binary's real window under Xvfb, driven by xdotool (cmd/inspector
# window_xvfb_test.go; docs/workbench.md): a step of its own, after test-ui, so no other
# package's tests load the machine while it reads the screen. About 3 minutes.
test-window:
	$(GO) test -tags $(TAGS) -count=1 -timeout 15m -run '^TestRealWindow$$' -v ./cmd/inspector/

# The core packages must build without cgo and for the other OSes.
cross:
	CGO_ENABLED=0 $(GO) build $(CORE)
	CGO_ENABLED=0 GOOS=windows $(GO) build $(CORE)
	CGO_ENABLED=0 GOOS=darwin $(GO) build $(CORE)
	CGO_ENABLED=0 GOOS=windows $(GO) vet ./platform/... ./ui/nativedialog/...
	CGO_ENABLED=0 GOOS=darwin $(GO) vet ./platform/... ./ui/nativedialog/...

# Every fuzz target's checked-in corpus (testdata/fuzz) runs as ordinary tests in
# test-core and test-ui, deterministically. Random exploration (fuzz-short) is not part of
# the gate: in this session's CI runs it found a new input almost every run, which made the
# gate's outcome a matter of chance. Run `make fuzz-short` before committing parser changes;
# check in what it finds under testdata/fuzz.
# gofmt first: a formatting slip fails in a second, not after the whole run.
test: fmt-check deps cross test-core test-ui test-window h2spec test-windows-if-possible

fmt-check:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# Go micro-benchmarks, then the side-by-side run (bench/, its own module): Inspector against
# martian, goproxy, mitmdump and nginx, proxy pinned to CPU 1; it rewrites its section of
# docs/perf.md. mitmproxy and nginx are installed when missing; a peer that cannot be
# installed or run is skipped with a line in the report.
BENCH_PKGS := mitmproxy nginx util-linux
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1s ./engine/ ./rootca/ ./filter/
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1x ./store/
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 3x ./diff/
	@missing=""; for p in $(BENCH_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  ( $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing ) \
	    || echo "bench: could not install$$missing; the peers they provide will be skipped"; \
	fi
	cd bench && $(GO) test -run '^$$' -bench . -benchtime 1x -count 3 ./listeners/
	cd bench && $(GO) run ./cmd/benchrun -repo .. -out ../docs/perf.md

# HTTP/2 conformance of the proxy's client-facing side through a CONNECT tunnel (about 15s).
H2SPEC := github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible
h2spec:
	GOBIN=$(CURDIR)/bin $(GO) install $(H2SPEC)
	INSPECTOR_H2SPEC=$(CURDIR)/bin/h2spec $(GO) test -count=1 -run '^TestH2Spec$$' -v ./engine/

# Every fuzz target briefly (seeds in the code and in testdata/fuzz always run as tests).
ENGINE_FUZZ := FuzzBodyFramer FuzzCheckHead FuzzHTTP1Proxy FuzzHTTP1Tunnel FuzzConnectTarget FuzzH2FrameTap \
               FuzzParseAltSvcH3
CODEGEN_FUZZ := FuzzCurl FuzzWget FuzzHTTPie FuzzPowerShell FuzzFetch FuzzNode FuzzPython FuzzHTTPX \
               FuzzGo FuzzJava FuzzCSharp FuzzPHP FuzzRust
fuzz-short:
	@set -e; for t in $(ENGINE_FUZZ); do \
	  $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime 10s ./engine/; done
	@set -e; for t in FuzzWSParser FuzzWSRelay; do \
	  $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime 10s ./engine/internal/ws/; done
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 10s ./filter/
	$(GO) test -run '^$$' -fuzz '^FuzzRead$$' -fuzztime 10s ./store/har/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeSessionMeta$$' -fuzztime 10s ./store/
	@set -e; for t in FuzzProtoRaw FuzzSplitFrames FuzzParseSSE FuzzSplitMultipart FuzzViews; do \
	  $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime 10s ./content/; done
	$(GO) test -run '^$$' -fuzz '^FuzzParseIgnore$$' -fuzztime 10s ./diff/
	$(GO) test -run '^$$' -fuzz '^FuzzBodies$$' -fuzztime 10s ./diff/
	@set -e; for t in $(CODEGEN_FUZZ); do \
	  $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime 10s ./codegen/; done

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./filter/

clean:
	rm -f $(BIN)

screenshots: build
	sh docs/screenshots/take.sh

# Debian's Firefox ESR, headless on a fresh HOME through the proxy after `ca install`
# (cmd/inspector TestFirefoxThroughProxyAfterCAInstall, about a minute; test-ui runs it too).
test-firefox: deps
	$(GO) test -tags $(TAGS) -count=1 -timeout 10m -run '^TestFirefoxThroughProxyAfterCAInstall$$' -v ./cmd/inspector/

# Windows under Wine: the full GUI binary cross-built with mingw, run in a throwaway
# WINEPREFIX by platform/windows/winetest (CA, HTTPS through the proxy, WinINet proxy and
# its watchdog, the window under Xvfb $(WINE_DISPLAY)). Wine 8 lacks ProcessPrng, which
# Go's runtime loads from bcryptprimitives.dll: a small mingw DLL supplies it, in the test
# prefix only. About 8 minutes cold (the cgo build), 3 warm.
WINE_PKGS    := wine wine64 libwine gcc-mingw-w64-x86-64 xvfb imagemagick curl
WINE_OUT     := $(CURDIR)/bin/windows
WINE_DISPLAY ?= :95
MINGW_CC     := x86_64-w64-mingw32-gcc
windows-deps:
	@missing=""; for p in $(WINE_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

$(WINE_OUT)/bcryptprimitives.dll: platform/windows/winetest/shim/processprng.c platform/windows/winetest/shim/processprng.def
	@mkdir -p $(WINE_OUT)
	$(MINGW_CC) -shared -O2 -o $@ $^ -ladvapi32

# The GUI binary for Windows (go build's cache makes a rebuild cheap).
windows-exe: windows-deps
	@mkdir -p $(WINE_OUT)
	CGO_ENABLED=1 CC=$(MINGW_CC) GOOS=windows GOARCH=amd64 $(GO) build -tags $(TAGS) -o $(WINE_OUT)/inspector.exe ./cmd/inspector

test-windows: windows-deps windows-exe $(WINE_OUT)/bcryptprimitives.dll
	CGO_ENABLED=0 GOOS=windows GOARCH=amd64 $(GO) test -c -o $(WINE_OUT)/platform-windows.test.exe ./platform/windows/
	INSPECTOR_WINE_EXE=$(WINE_OUT)/inspector.exe INSPECTOR_WINE_SHIM=$(WINE_OUT)/bcryptprimitives.dll \
	INSPECTOR_WINE_PLATFORM=$(WINE_OUT)/platform-windows.test.exe INSPECTOR_WINE_DISPLAY=$(WINE_DISPLAY) \
	INSPECTOR_WINE_OUT=$(WINE_OUT)/screenshots INSPECTOR_TEST_REAL_PROXY=1 \
	  $(GO) test -tags winetest -count=1 -timeout 30m -v ./platform/windows/winetest/

# ui/nativedialog's Windows tests (real comdlg32 open, save and folder dialogs, answered by
# hooks) under Wine's null display driver in a prefix of their own; a few seconds.
test-dialogs-windows: windows-deps $(WINE_OUT)/bcryptprimitives.dll
	CGO_ENABLED=0 GOOS=windows GOARCH=amd64 $(GO) test -c -o $(WINE_OUT)/nativedialog.test.exe ./ui/nativedialog/
	export WINEPREFIX=$(WINE_OUT)/dialogs-prefix WINEDEBUG=-all DISPLAY= WINEDLLOVERRIDES=bcryptprimitives=n; \
	  wineboot -i >/dev/null 2>&1; wineserver -w; \
	  wine reg add 'HKCU\Software\Wine\Drivers' /v Graphics /d null /f >/dev/null && wineserver -w && \
	  cp $(WINE_OUT)/bcryptprimitives.dll $$WINEPREFIX/drive_c/windows/system32/ && \
	  wine $(WINE_OUT)/nativedialog.test.exe -test.v -test.timeout 120s

# In `make test`: the Wine run when wine64 and mingw can be installed (CI: Debian), else a
# line saying why it did not run.
test-windows-if-possible:
	@if $(MAKE) -s windows-deps; then $(MAKE) test-windows test-dialogs-windows; \
	else echo "make test: test-windows NOT run: wine64 / gcc-mingw-w64-x86-64 could not be installed"; fi

# Linux desktop bundle (inspector.tar.xz with the .desktop entry and icon) with the fyne
# tool, which reads FyneApp.toml from the main package's folder, and the .deb; each is
# smoke-tested (the .deb unpacked into a scratch root starts headless).
FYNE_TOOL := fyne.io/tools/cmd/fyne@v1.7.4
package: package-tarxz package-deb

package-tarxz: deps
	cp FyneApp.toml cmd/inspector/FyneApp.toml
	cd cmd/inspector && $(GO) run $(FYNE_TOOL) package -os linux -tags $(TAGS) -release; \
	  status=$$?; rm -f FyneApp.toml fyne_metadata_init.go; exit $$status
	mv cmd/inspector/*.tar.xz . 2>/dev/null || true

package-deb: deps
	@mkdir -p bin dist
	$(GO) build -tags $(TAGS) -ldflags "-s -w" -o bin/inspector-linux ./cmd/inspector
	deb=$$(.ci/package-deb.sh bin/inspector-linux dist) && echo "built $$deb" && .ci/package-smoke.sh deb "$$deb"

# Windows .exe with icon, version info and manifest (the fyne tool writes them as a .syso
# from FyneApp.toml and builds with mingw), smoke-tested with `inspector help` under Wine.
# WINDOWS_RELEASE= (empty) skips fyne's -release (-trimpath, -s -w, the release tag): a
# build that reuses `make test-windows`'s cache instead of a cold 20-minute one.
WINDOWS_RELEASE ?= -release
package-windows: windows-deps $(WINE_OUT)/bcryptprimitives.dll
	@mkdir -p dist
	GOBIN=$(CURDIR)/bin $(GO) install $(FYNE_TOOL)
	cp FyneApp.toml cmd/inspector/FyneApp.toml
	v=$$(sed -n 's/^ *Version *= *"\(.*\)"/\1/p' FyneApp.toml); b=$$(sed -n 's/^ *Build *= *\([0-9]*\)/\1/p' FyneApp.toml); \
	  sed "s/@VERSION@/$$v.$$b/" assets/windows.manifest.in > cmd/inspector/inspector.exe.manifest
	cd cmd/inspector && CGO_ENABLED=1 CC=$(MINGW_CC) $(CURDIR)/bin/fyne package -os windows -tags $(TAGS) $(WINDOWS_RELEASE) -name Inspector; \
	  status=$$?; rm -f FyneApp.toml fyne_metadata_init.go *.syso inspector.exe.manifest; exit $$status
	mv cmd/inspector/Inspector.exe dist/Inspector.exe
	.ci/package-smoke.sh exe dist/Inspector.exe $(WINE_OUT)/bcryptprimitives.dll
