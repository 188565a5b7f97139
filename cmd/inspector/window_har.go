package main

import "inspector/ui"

// harCodec is the HAR codec the window's export and import use.
func harCodec() *ui.HAR { return ui.StoreHAR(version) }
