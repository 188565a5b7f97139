package nativedialog

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	comdlg32             = windows.NewLazySystemDLL("comdlg32.dll")
	getOpenFileNameW     = comdlg32.NewProc("GetOpenFileNameW")
	getSaveFileNameW     = comdlg32.NewProc("GetSaveFileNameW")
	commDlgExtendedError = comdlg32.NewProc("CommDlgExtendedError")
	shell32              = windows.NewLazySystemDLL("shell32.dll")
	shBrowseForFolderW   = shell32.NewProc("SHBrowseForFolderW")
	shGetPathFromIDListW = shell32.NewProc("SHGetPathFromIDListW")
	ole32                = windows.NewLazySystemDLL("ole32.dll")
	oleInitialize        = ole32.NewProc("OleInitialize")
	oleUninitialize      = ole32.NewProc("OleUninitialize")
	coTaskMemFree        = ole32.NewProc("CoTaskMemFree")
	user32               = windows.NewLazySystemDLL("user32.dll")
	sendMessageW         = user32.NewProc("SendMessageW")
)

func available() bool {
	return getOpenFileNameW.Find() == nil && getSaveFileNameW.Find() == nil
}

// open shows the common dialog on a locked OS thread. The dialog is modal and cannot be
// closed from here: ctx is only checked before it is shown.
func open(ctx context.Context, o Options) (string, error) {
	if !available() {
		return "", ErrUnavailable
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if o.Folder {
		return browseFolder(o)
	}
	ofn, file := buildOFN(o, o.Parent)
	if ofnTestHook != 0 {
		ofn.flags |= ofnEnableHook
		ofn.hook = ofnTestHook
	}
	proc := getOpenFileNameW
	if o.Save {
		proc = getSaveFileNameW
	}
	if err := callOFN(proc, ofn); err != nil {
		return "", err
	}
	return fromUTF16(file), nil
}

// callOFN runs GetOpenFileNameW or GetSaveFileNameW: ErrCancelled when the user closed it,
// an error with CommDlgExtendedError's code when it failed.
func callOFN(proc *windows.LazyProc, ofn *openFileNameW) error {
	ok, _, _ := proc.Call(uintptr(unsafe.Pointer(ofn)))
	runtime.KeepAlive(ofn)
	if ok != 0 {
		return nil
	}
	code, _, _ := commDlgExtendedError.Call()
	if code == 0 {
		return ErrCancelled
	}
	return fmt.Errorf("file dialog: CommDlgExtendedError 0x%04x", code)
}

// ofnTestHook, when set by a test, is an OFNHookProc that answers the dialog.
var ofnTestHook uintptr

// browseTestHook, when set by a test, answers the folder dialog once it is up.
var browseTestHook func(hwnd uintptr)

const ofnEnableHook = 0x00000020

// browseInfoW is shlobj.h's BROWSEINFOW.
type browseInfoW struct {
	owner       uintptr
	root        uintptr
	displayName *uint16
	title       *uint16
	flags       uint32
	callback    uintptr
	lParam      uintptr
	image       int32
}

const (
	bifReturnOnlyFSDirs = 0x0001
	bifEditBox          = 0x0010
	bifNewDialogStyle   = 0x0040
	bffmInitialized     = 1
	bffmSetSelectionW   = 0x0400 + 103
)

// browseCallback selects the initial folder once the dialog is up (one callback for the
// process: Windows allows a limited number).
var browseCallback = sync.OnceValue(func() uintptr {
	return windows.NewCallback(func(hwnd, msg, _, data uintptr) uintptr {
		if msg == bffmInitialized && data != 0 {
			sendMessageW.Call(hwnd, bffmSetSelectionW, 1, data)
			if browseTestHook != nil {
				browseTestHook(hwnd)
			}
		}
		return 0
	})
})

// browseFolder shows SHBrowseForFolderW (the new style, with an edit box for a typed path).
func browseFolder(o Options) (string, error) {
	oleInitialize.Call(0) // the new dialog style needs OLE on this thread
	defer oleUninitialize.Call()
	name := make([]uint16, windows.MAX_PATH)
	bi := &browseInfoW{
		owner:       o.Parent,
		displayName: &name[0],
		title:       ptr(o.Title),
		flags:       bifReturnOnlyFSDirs | bifNewDialogStyle | bifEditBox,
	}
	var initial *uint16
	if o.InitialDir != "" {
		initial = ptr(o.InitialDir)
		bi.callback = browseCallback()
		bi.lParam = uintptr(unsafe.Pointer(initial))
	}
	pidl, _, _ := shBrowseForFolderW.Call(uintptr(unsafe.Pointer(bi)))
	runtime.KeepAlive(bi)
	runtime.KeepAlive(initial)
	if pidl == 0 {
		return "", ErrCancelled
	}
	defer coTaskMemFree.Call(pidl)
	path := make([]uint16, ofnFileChars)
	if ok, _, _ := shGetPathFromIDListW.Call(pidl, uintptr(unsafe.Pointer(&path[0]))); ok == 0 {
		return "", fmt.Errorf("folder dialog: %q is not a file-system folder", fromUTF16(name))
	}
	return fromUTF16(path), nil
}
