package ui

func init() { inlineStoreReads = true }
