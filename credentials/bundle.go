package main

import (
	"fmt"

	"github.com/likes/likes/pkg/redisacl"
)

// A bundle is every credential of a deployment, by file name (the Kubernetes Secret's keys are
// the same names): the secrets themselves, and the ACL files made from the passwords.
type bundle map[string]string

// The bundle's file names.
const (
	benchKeyFile    = "bench-session.key"
	dataACLFile     = "redis-users.acl"
	sentinelACLFile = "sentinel-users.acl"
)

// passwordFile is the file that holds user's password.
func passwordFile(user string) string { return user + ".password" }

// secretFiles are the files that hold secrets; every other file of the bundle is made from them.
func secretFiles() []string {
	files := []string{benchKeyFile}
	for _, u := range redisacl.Users {
		files = append(files, passwordFile(u))
	}
	return files
}

// complete fills in what b lacks: a fresh secret for each missing one, and the ACL files from the
// passwords (written again every time, so that they always match them).
func complete(b bundle, prefix string) error {
	for _, f := range secretFiles() {
		if b[f] == "" {
			b[f] = redisacl.NewSecret()
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

// consumers names, for each consumer of credentials, the files it gets: each program only its
// own password (loadgen the monitor's), the data nodes and the Sentinels their ACL file, the
// password they authenticate with, and the monitor's for their health checks; the data nodes
// also keep the default user's, an operator's password for administration (redis-cli there).
var consumers = map[string][]string{
	"redis":    {dataACLFile, passwordFile(redisacl.Replica), passwordFile(redisacl.Monitor), passwordFile(redisacl.Default)},
	"sentinel": {sentinelACLFile, passwordFile(redisacl.Sentinel), passwordFile(redisacl.Monitor)},
	"writer":   {passwordFile(redisacl.Writer), benchKeyFile},
	"fanout":   {passwordFile(redisacl.Fanout)},
	"loadgen":  {passwordFile(redisacl.Monitor), benchKeyFile},
}

// checkSecret refuses a secret too short to be one (a file truncated by hand, say).
func checkSecret(name, v string) error {
	if len(v) < redisacl.MinPasswordLen {
		return fmt.Errorf("%s holds %d bytes; at least %d are needed (delete it to have a new one made)", name, len(v), redisacl.MinPasswordLen)
	}
	return nil
}
