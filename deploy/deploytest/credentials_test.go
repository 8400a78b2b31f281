package deploytest

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
	corev1 "k8s.io/api/core/v1"
)

// credentialsOf is what each consumer of the Redis credentials must be given, and nothing more:
// its Redis user (for the services) and the files of its role. The credentials command makes
// the files under these names (credentials/bundle.go).
var credentialsOf = map[string]struct {
	user  string
	files []string
}{
	"redis":      {"", []string{"monitor.password", "redis-users.acl", "replica.password"}}, // not default.password: an operator reads it from the Secret
	"sentinel":   {"", []string{"monitor.password", "sentinel-users.acl", "sentinel.password"}},
	"writer-svc": {"writer", []string{"session.key", "writer.password"}},
	"fanout-svc": {"fanout", []string{"fanout.password"}},
}

// TestKubeCredentialsPerRole: every pod that talks to Redis mounts the Secret the credentials Job
// makes, only its own role's files of it, and connects as its own user; only that Job has a
// service account token, and its Role can read (and add keys to) no Secret but the one it makes.
func TestKubeCredentialsPerRole(t *testing.T) {
	objs := loadKube(t)
	specs := map[string]corev1.PodSpec{}
	for name, d := range objs.deployments {
		specs[name] = d.Spec.Template.Spec
	}
	for name, s := range objs.statefulSets {
		specs[name] = s.Spec.Template.Spec
	}
	for name, want := range credentialsOf {
		spec, ok := specs[name]
		if !ok {
			t.Errorf("no workload %s", name)
			continue
		}
		var files []string
		for _, v := range spec.Volumes {
			if v.Secret != nil && v.Secret.SecretName == "likes-redis-credentials" {
				for _, it := range v.Secret.Items {
					files = append(files, it.Key)
				}
			}
		}
		slices.Sort(files)
		if !slices.Equal(files, want.files) {
			t.Errorf("%s mounts %v of the credentials; want %v", name, files, want.files)
		}
		env := map[string]string{}
		for _, e := range spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		if want.user != "" && (env["REDIS_USERNAME"] != want.user || env["REDIS_PASSWORD_FILE"] != "/credentials/"+want.user+".password") {
			t.Errorf("%s connects as %q with %q; want %s and its password file", name, env["REDIS_USERNAME"], env["REDIS_PASSWORD_FILE"], want.user)
		}
		if want.user == "" && env["REDIS_CREDENTIALS"] != "/credentials" {
			t.Errorf("%s: REDIS_CREDENTIALS %q; want /credentials", name, env["REDIS_CREDENTIALS"])
		}
		if a := spec.AutomountServiceAccountToken; a == nil || *a {
			t.Errorf("%s mounts a service account token", name)
		}
	}
	job, ok := objs.jobs["likes-credentials"]
	if !ok {
		t.Fatal("no Job likes-credentials")
	}
	if sa := job.Spec.Template.Spec.ServiceAccountName; sa != "likes-credentials" || objs.accounts[sa] == nil {
		t.Errorf("the credentials Job runs as %q; want its own account likes-credentials", sa)
	}
	for _, r := range objs.roles["likes-credentials"].Rules {
		for _, verb := range r.Verbs {
			ownSecret := (verb == "get" || verb == "patch") && slices.Equal(r.ResourceNames, []string{"likes-redis-credentials"})
			if verb != "create" && !ownSecret {
				t.Errorf("the credentials Role may %s %v %v; want only create, and get and patch of its own Secret", verb, r.Resources, r.ResourceNames)
			}
		}
	}
}

// TestComposeCredentialsPerRole: in Compose each consumer mounts its own credentials volume and
// no other, and the services connect as their own users.
func TestComposeCredentialsPerRole(t *testing.T) {
	p := loadCompose(t)
	want := map[string]string{"writer-svc": "credentials-writer", "fanout-svc": "credentials-fanout",
		"redis-0": "credentials-redis", "sentinel-0": "credentials-sentinel", "loadgen": "credentials-loadgen"}
	for name, volume := range want {
		var got []string
		for _, v := range p.Services[name].Volumes {
			if strings.HasPrefix(v.Source, "credentials-") {
				got = append(got, v.Source)
			}
		}
		if !slices.Equal(got, []string{volume}) {
			t.Errorf("%s mounts credentials volumes %v; want only %s", name, got, volume)
		}
	}
	for name, want := range map[string][2]string{
		"writer-svc": {"REDIS_USERNAME", "writer"}, "fanout-svc": {"REDIS_USERNAME", "fanout"},
		"loadgen": {"LOADGEN_REDIS_USERNAME", "monitor"},
	} {
		if u := p.Services[name].Environment[want[0]]; u == nil || *u != want[1] {
			t.Errorf("%s connects to Redis as %v; want %s", name, u, want[1])
		}
	}
}

// TestSessionKeysAreAFile: every shipped deployment signs sessions with the credentials' key file
// in the writers' own volume or Secret, never with keys in Redis (which the writers' Redis user,
// and anyone holding its password, could read), and Compose leaves benchmark sessions off unless
// BENCH_SESSION_KEY_FILE is set.
func TestSessionKeysAreAFile(t *testing.T) {
	p := loadCompose(t)
	w := p.Services["writer-svc"]
	file := serviceEnv(w, "SESSION_KEY_FILE")
	dir, name := path.Split(file)
	if name != "session.key" || !slices.ContainsFunc(w.Volumes, func(v types.ServiceVolumeConfig) bool {
		return v.Source == "credentials-writer" && v.Target+"/" == dir && v.ReadOnly
	}) {
		t.Errorf("compose writer-svc SESSION_KEY_FILE %q; want session.key in its credentials volume, read-only", file)
	}
	if s := serviceEnv(w, "AUTH_SESSION_SECRET"); s != "" {
		t.Errorf("compose writer-svc AUTH_SESSION_SECRET %q; want the key file alone", s)
	}
	if b := serviceEnv(w, "BENCH_SESSION_KEY_FILE"); b != "" {
		t.Errorf("compose writer-svc BENCH_SESSION_KEY_FILE %q by default; want benchmark sessions off", b)
	}
	const bench = "/likes-credentials/bench-session.key"
	if b := serviceEnv(loadCompose(t, "BENCH_SESSION_KEY_FILE="+bench).Services["writer-svc"], "BENCH_SESSION_KEY_FILE"); b != bench {
		t.Errorf("compose with BENCH_SESSION_KEY_FILE=%s: the writers get %q; want it passed on", bench, b)
	}

	objs := loadKube(t)
	env := containerEnv(t, objs, objs.deployments["writer-svc"].Spec.Template.Spec.Containers[0])
	if env["SESSION_KEY_FILE"] != "/credentials/session.key" {
		t.Errorf("kube writer-svc SESSION_KEY_FILE %q; want /credentials/session.key", env["SESSION_KEY_FILE"])
	}
	if _, ok := env["BENCH_SESSION_KEY_FILE"]; ok {
		t.Error("kube writer-svc has BENCH_SESSION_KEY_FILE in the base; want benchmark sessions off")
	}
}
