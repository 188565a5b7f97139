package nativedialog

import (
	"strings"
	"unicode/utf16"
	"unsafe"
)

// OPENFILENAMEW flags (commdlg.h).
const (
	ofnOverwritePrompt = 0x00000002
	ofnHideReadOnly    = 0x00000004
	ofnNoChangeDir     = 0x00000008
	ofnPathMustExist   = 0x00000800
	ofnFileMustExist   = 0x00001000
	ofnExplorer        = 0x00080000
	ofnLongNames       = 0x00200000
)

// ofnFileChars is the size of the buffer the chosen path is written into (32k, the longest
// Windows path).
const ofnFileChars = 32768

// openFileNameW is commdlg.h's OPENFILENAMEW; Go lays it out as C does on 386, amd64 and
// arm64 (Sizeof 152 on 64-bit, 88 on 32-bit).
type openFileNameW struct {
	structSize    uint32
	owner         uintptr
	instance      uintptr
	filter        *uint16
	customFilter  *uint16
	maxCustFilter uint32
	filterIndex   uint32
	file          *uint16
	maxFile       uint32
	fileTitle     *uint16
	maxFileTitle  uint32
	initialDir    *uint16
	title         *uint16
	flags         uint32
	fileOffset    uint16
	fileExtension uint16
	defExt        *uint16
	custData      uintptr
	hook          uintptr
	templateName  *uint16
	reserved      uintptr
	reserved2     uint32
	flagsEx       uint32
}

// ofnFlags are the flags of the open or save dialog for o.
func ofnFlags(o Options) uint32 {
	f := uint32(ofnExplorer | ofnLongNames | ofnNoChangeDir | ofnHideReadOnly | ofnPathMustExist)
	if o.Save {
		return f | ofnOverwritePrompt
	}
	return f | ofnFileMustExist
}

// ofnFilter is lpstrFilter: "name\0pat;pat\0…\0" ending in a second NUL; nil for no filters.
func ofnFilter(fs []Filter) []uint16 {
	if len(fs) == 0 {
		return nil
	}
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.Name + "\x00" + strings.Join(f.Patterns, ";") + "\x00")
	}
	b.WriteString("\x00")
	return utf16.Encode([]rune(b.String()))
}

// utf16z is s as a NUL-ended UTF-16 string (NULs inside s end it early, as Windows would).
func utf16z(s string) []uint16 {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return append(utf16.Encode([]rune(s)), 0)
}

// ptr is the first element of a NUL-ended UTF-16 string, nil for an empty one.
func ptr(s string) *uint16 {
	if s == "" {
		return nil
	}
	return &utf16z(s)[0]
}

// buildOFN fills an OPENFILENAMEW for o; file is the buffer Windows writes the path into
// (it starts with the proposed name).
func buildOFN(o Options, owner uintptr) (*openFileNameW, []uint16) {
	file := make([]uint16, ofnFileChars)
	if o.Save && o.InitialName != "" {
		copy(file[:ofnFileChars-1], utf16.Encode([]rune(o.InitialName)))
	}
	ofn := &openFileNameW{
		owner:      owner,
		file:       &file[0],
		maxFile:    ofnFileChars,
		initialDir: ptr(o.InitialDir),
		title:      ptr(o.Title),
		flags:      ofnFlags(o),
	}
	ofn.structSize = uint32(unsafe.Sizeof(*ofn))
	if f := ofnFilter(o.Filters); f != nil {
		ofn.filter = &f[0]
		ofn.filterIndex = 1
	}
	if o.Save && len(o.Filters) > 0 && len(o.Filters[0].Patterns) > 0 {
		if ext, ok := strings.CutPrefix(o.Filters[0].Patterns[0], "*."); ok && !strings.ContainsAny(ext, "*?") {
			ofn.defExt = ptr(ext) // "name" typed alone is saved as name.ext
		}
	}
	return ofn, file
}

// fromUTF16 is the string before the first NUL of b.
func fromUTF16(b []uint16) string {
	for i, c := range b {
		if c == 0 {
			b = b[:i]
			break
		}
	}
	return string(utf16.Decode(b))
}
