package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/likes/likes/pkg/rediskeys"
)

const usage = "usage: credentials files -dir DIR [-prefix P] | credentials kube -secret NAME [-namespace NS] [-prefix P] | credentials session-key [-kid ID] [-file F [-drop KID]]"

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%s", usage)
	}
	fs := flag.NewFlagSet("credentials "+args[0], flag.ContinueOnError)
	fs.SetOutput(out)
	prefix := fs.String("prefix", rediskeys.DefaultPrefix, "key prefix of the deployment (REDIS_PREFIX): the users' key patterns start with it")
	switch args[0] {
	case "files":
		dir := fs.String("dir", "", "directory that holds a subdirectory per consumer (redis, sentinel, writer, fanout, loadgen)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *dir == "" {
			return fmt.Errorf("-dir is required")
		}
		made, err := writeFiles(*dir, *prefix)
		if err != nil {
			return err
		}
		if len(made) == 0 {
			fmt.Fprintf(out, "credentials in %s: kept\n", *dir)
		} else {
			fmt.Fprintf(out, "credentials in %s: made %s\n", *dir, strings.Join(made, ", "))
		}
		return nil
	case "session-key":
		return sessionKey(args[1:], out)
	case "kube":
		secret := fs.String("secret", "likes-redis-credentials", "the Secret to make when it is missing")
		namespace := fs.String("namespace", "", "its namespace (default: the Pod's own)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		api, err := inCluster()
		if err != nil {
			return err
		}
		ns := *namespace
		if ns == "" {
			if ns, err = podNamespace(); err != nil {
				return err
			}
		}
		did, err := api.ensureSecret(ctx, ns, *secret, *prefix)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "secret %s/%s: %s\n", ns, *secret, did)
		return nil
	}
	return fmt.Errorf("%s", usage)
}
