{{/* The labels of every object: the component's name (deploy/base's selectors) and Helm's. */}}
{{- define "likes.labels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/part-of: likes
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end }}

{{/* The selector of a component's pods: deploy/base's, so the chart can take over its objects. */}}
{{- define "likes.selector" -}}
app.kubernetes.io/name: {{ . }}
{{- end }}

{{/* An image reference from images.<name>. */}}
{{- define "likes.image" -}}
{{ printf "%s:%s" .repository .tag }}
{{- end }}

{{/* The Secret that holds the Redis users' passwords and ACL files. */}}
{{- define "likes.credentialsSecret" -}}
{{ .Values.credentials.existingSecret | default "likes-redis-credentials" }}
{{- end }}

{{/* Whether the services log in to Redis as their own users (always with the chart's Redis). */}}
{{- define "likes.redisACL" -}}
{{- if or (eq .Values.redis.mode "sentinel") .Values.redis.external.acl }}true{{ end }}
{{- end }}

{{/* Every Sentinel of the chart's Redis, by its name under the headless Service. */}}
{{- define "likes.sentinelAddrs" -}}
{{- $addrs := list }}
{{- range $i := until (int .Values.redis.sentinel.replicas) }}
{{- $addrs = append $addrs (printf "sentinel-%d.sentinel:26379" $i) }}
{{- end }}
{{- join "," $addrs }}
{{- end }}

{{/* The pod security context of the services: non-root, and the Secret's files are the group's. */}}
{{- define "likes.podSecurity" -}}
runAsNonRoot: true
runAsUser: {{ . }}
runAsGroup: {{ . }}
fsGroup: {{ . }}
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "likes.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end }}

{{/* Pod placement values of a component (nodeSelector, tolerations, affinity). */}}
{{- define "likes.placement" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
