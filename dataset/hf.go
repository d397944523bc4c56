package dataset

import "errors"

// HFRef names a file in a Hugging Face dataset repository.
type HFRef struct {
	Repo     string
	Revision string // "" = main
	File     string // default traces.jsonl
}

// ResolveAlias maps a --public-dataset alias to its HF dataset.
func ResolveAlias(alias string) (HFRef, error) {
	return HFRef{}, errors.New("dataset: ResolveAlias not implemented yet")
}

// ParseHFDataset parses "org/name[@revision]".
func ParseHFDataset(s string) (HFRef, error) {
	return HFRef{}, errors.New("dataset: ParseHFDataset not implemented yet")
}

// HubCacheDir returns the Hugging Face hub cache directory.
func HubCacheDir(getenv func(string) string) string {
	return ""
}

// ResolveHF finds ref's file in the local hub cache.
func ResolveHF(ref HFRef, getenv func(string) string) (path string, commit string, err error) {
	return "", "", errors.New("dataset: ResolveHF not implemented yet")
}
