//go:build !unix

package main

// noCoreFile does nothing where the system has no core-file limit.
func noCoreFile() {}
