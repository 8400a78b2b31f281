package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// writeFiles keeps the bundle in dir, one subdirectory per consumer (docker-compose.yml mounts
// each into its consumer only, as a volume of its own): it reads the secrets found there, makes
// the missing ones, and writes every consumer's files. Files are readable by all (0444): the
// consumers run as users of their own images, and the volume, mounted into that consumer alone,
// is what keeps a file from the others.
func writeFiles(dir, prefix string) (made []string, err error) {
	b := bundle{}
	for _, name := range secretFiles() {
		v, found, err := readSecret(dir, name)
		if err != nil {
			return nil, err
		}
		if found {
			b[name] = v
		} else {
			made = append(made, name)
		}
	}
	if err := complete(b, prefix); err != nil {
		return nil, err
	}
	for consumer, names := range consumers {
		sub := filepath.Join(dir, consumer)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return nil, err
		}
		for _, name := range names {
			if err := writeAtomic(filepath.Join(sub, name), b[name]); err != nil {
				return nil, err
			}
		}
	}
	slices.Sort(made)
	return made, nil
}

// readSecret looks for the secret name in every consumer's directory that should hold it.
func readSecret(dir, name string) (string, bool, error) {
	for consumer, names := range consumers {
		if !slices.Contains(names, name) {
			continue
		}
		p := filepath.Join(dir, consumer, name)
		raw, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", false, err
		}
		v := strings.TrimRight(string(raw), "\r\n")
		if err := checkSecret(p, v); err != nil {
			return "", false, err
		}
		return v, true, nil
	}
	return "", false, nil
}

// writeAtomic replaces path with content through a rename, so a consumer that starts meanwhile
// reads the old file or the new one, never half of one.
func writeAtomic(path, content string) error {
	tmp := path + ".new"
	_ = os.Remove(tmp) // left by a run that was stopped; it is read-only
	if err := os.WriteFile(tmp, []byte(strings.TrimRight(content, "\n")+"\n"), 0o444); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return nil
}
