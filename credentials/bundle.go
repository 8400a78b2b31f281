package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/likes/likes/pkg/redisacl"
	"github.com/likes/likes/pkg/sessiontoken"
)

// A bundle is every credential of a deployment, by file name (the Kubernetes Secret's keys are
// the same names): the secrets themselves, and the ACL files made from the passwords.
type bundle map[string]string

// The bundle's file names.
const (
	benchKeyFile    = "bench-session.key"
	sessionKeyFile  = "session.key" // the writers' session signing keys (SESSION_KEY_FILE)
	dataACLFile     = "redis-users.acl"
	sentinelACLFile = "sentinel-users.acl"
)

// passwordFile is the file that holds user's password.
func passwordFile(user string) string { return user + ".password" }

// secretFiles are the files that hold secrets; every other file of the bundle is made from them.
func secretFiles() []string {
	files := []string{benchKeyFile, sessionKeyFile}
	for _, u := range redisacl.Users {
		files = append(files, passwordFile(u))
	}
	return files
}

// complete fills in what b lacks: a fresh secret for each missing one, and the ACL files from the
// passwords (written again every time, so that they always match them).
func complete(b bundle, prefix string) error {
	for _, f := range secretFiles() {
		if err := completeOne(b, f); err != nil {
			return err
		}
	}
	pw := redisacl.Passwords{}
	for _, u := range redisacl.Users {
		pw[u] = b[passwordFile(u)]
	}
	data, err := redisacl.DataNodes(prefix, pw)
	if err != nil {
		return err
	}
	sentinels, err := redisacl.Sentinels(prefix, pw)
	if err != nil {
		return err
	}
	b[dataACLFile], b[sentinelACLFile] = data, sentinels
	return nil
}

// completeOne makes the secret file f unless b has it.
func completeOne(b bundle, f string) error {
	switch {
	case b[f] != "":
	case f == sessionKeyFile:
		line, err := newSessionKey()
		if err != nil {
			return err
		}
		b[f] = line
	default:
		b[f] = redisacl.NewSecret()
	}
	return nil
}

// consumers names, for each consumer of credentials, the files it gets: each program only its
// own password (loadgen the monitor's), the data nodes and the Sentinels their ACL file, the
// password they authenticate with, and the monitor's for their health checks; the data nodes
// also keep the default user's, an operator's password for administration (redis-cli there).
var consumers = map[string][]string{
	"redis":    {dataACLFile, passwordFile(redisacl.Replica), passwordFile(redisacl.Monitor), passwordFile(redisacl.Default)},
	"sentinel": {sentinelACLFile, passwordFile(redisacl.Sentinel), passwordFile(redisacl.Monitor)},
	"writer":   {passwordFile(redisacl.Writer), benchKeyFile, sessionKeyFile},
	"fanout":   {passwordFile(redisacl.Fanout)},
	"loadgen":  {passwordFile(redisacl.Monitor), benchKeyFile},
}

// newSessionKey is the line of a session key file for a fresh key, named for when it was made
// (a kid that tells an operator which key is older).
func newSessionKey() (string, error) {
	return sessiontoken.NewKeyLine(time.Now().UTC().Format("20060102T150405Z"))
}

// checkSecret refuses a secret too short to be one (a file truncated by hand, say), and a session
// key file the writers would refuse.
func checkSecret(name, v string) error {
	if filepath.Base(name) == sessionKeyFile {
		if _, err := sessiontoken.ParseKeyFile([]byte(v)); err != nil {
			return fmt.Errorf("%s: %w (fix it, or delete it to have a new one made)", name, err)
		}
		return nil
	}
	if len(v) < redisacl.MinPasswordLen {
		return fmt.Errorf("%s holds %d bytes; at least %d are needed (delete it to have a new one made)", name, len(v), redisacl.MinPasswordLen)
	}
	return nil
}
