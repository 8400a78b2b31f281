package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/likes/likes/pkg/sessiontoken"
)

// sessionKey runs `credentials session-key`: a rotation of the writers' session signing keys
// without a shell (the image has none). Without -file it prints a new key's line. With -file it
// appends one to that key file (the new key signs), or with -drop removes the key KID from it (its
// sessions end); the file is replaced through a rename, so a writer reading it meanwhile reads the
// old file or the new one, never half of one.
//
//	docker compose run --rm --no-deps credentials session-key -file /creds/writer/session.key
//	docker compose run --rm --no-deps credentials session-key -file /creds/writer/session.key -drop KID
func sessionKey(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("credentials session-key", flag.ContinueOnError)
	fs.SetOutput(out)
	kid := fs.String("kid", "", "the new key's id (default: the time it is made, such as 20261207T190000Z)")
	file := fs.String("file", "", "a session key file to append the new key to (default: print it)")
	drop := fs.String("drop", "", "with -file: remove the key of this id instead of adding one")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *drop != "" && *file == "" {
		return fmt.Errorf("-drop needs -file")
	}
	if *drop != "" {
		return dropSessionKey(*file, *drop, out)
	}
	line, err := newSessionKey()
	if *kid != "" {
		line, err = sessiontoken.NewKeyLine(*kid)
	}
	if err != nil {
		return err
	}
	if *file == "" {
		fmt.Fprintln(out, line)
		return nil
	}
	raw, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	if err := replaceKeyFile(*file, strings.TrimRight(string(raw), "\n")+"\n"+line); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: added key %s, which signs once the writers have read it (2m)\n", *file, strings.Fields(line)[0])
	return nil
}

// dropSessionKey removes the key kid from the key file at path; the last key is never removed.
func dropSessionKey(path, kid string, out io.Writer) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var kept []string
	found := false
	for line := range strings.SplitSeq(strings.TrimRight(string(raw), "\n"), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == kid {
			found = true
			continue
		}
		kept = append(kept, line)
	}
	if !found {
		return fmt.Errorf("%s holds no key %q", path, kid)
	}
	if err := replaceKeyFile(path, strings.Join(kept, "\n")); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: removed key %s; the sessions it signed end once the writers have read the file (5s)\n", path, kid)
	return nil
}

// replaceKeyFile writes content to the key file path if the writers would take it.
func replaceKeyFile(path, content string) error {
	if _, err := sessiontoken.ParseKeyFile([]byte(content)); err != nil {
		return fmt.Errorf("%s would become unusable, left as it is: %w", path, err)
	}
	return writeAtomic(path, content)
}
