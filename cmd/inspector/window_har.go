package main

import "inspector/ui"

// harCodec adapts package store/har to the UI; nil until that package has its API.
func harCodec() *ui.HAR { return nil }
