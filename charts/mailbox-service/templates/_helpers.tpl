{{/* Names: <release>-mailbox-service unless overridden, cut to 63 characters (DNS labels). */}}
{{- define "mailbox.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mailbox.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Name of one component's objects: <fullname>-<component> (component names are at most 8 characters). */}}
{{- define "mailbox.componentName" -}}
{{- printf "%s-%s" (include "mailbox.fullname" .root | trunc 54 | trimSuffix "-") .component }}
{{- end }}

{{- define "mailbox.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "mailbox.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: mailbox-service
{{- end }}

{{/* Selector labels of one component; args: dict "root" $ "component" "api". */}}
{{- define "mailbox.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mailbox.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "mailbox.componentLabels" -}}
{{ include "mailbox.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "mailbox.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The application pods need no Kubernetes API access; only the operator gets a token. */}}
{{- define "mailbox.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}{{ default (include "mailbox.fullname" .) .Values.serviceAccount.name }}{{ else }}{{ default "default" .Values.serviceAccount.name }}{{ end }}
{{- end }}

{{- define "mailbox.operatorServiceAccountName" -}}
{{- if .Values.operator.serviceAccount.create }}{{ default (include "mailbox.componentName" (dict "root" . "component" "operator")) .Values.operator.serviceAccount.name }}{{ else }}{{ default "default" .Values.operator.serviceAccount.name }}{{ end }}
{{- end }}

{{/*
API versions by what the cluster serves, so one chart fits old and new clusters. Against a cluster
.Capabilities.APIVersions is what the server lists; `helm template` without one lists its own
built-in set whatever --kube-version says, so the Kubernetes version must agree too
(autoscaling/v2 is served from 1.23, policy/v1 PodDisruptionBudgets from 1.21).
*/}}
{{- define "mailbox.hpaApiVersion" -}}
{{- if and (.Capabilities.APIVersions.Has "autoscaling/v2") (semverCompare ">=1.23-0" .Capabilities.KubeVersion.Version) }}autoscaling/v2{{ else }}autoscaling/v2beta2{{ end }}
{{- end }}

{{- define "mailbox.pdbApiVersion" -}}
{{- if and (.Capabilities.APIVersions.Has "policy/v1") (semverCompare ">=1.21-0" .Capabilities.KubeVersion.Version) }}policy/v1{{ else }}policy/v1beta1{{ end }}
{{- end }}

{{/* Environment shared by every application container (database, Redis, server key, config). */}}
{{- define "mailbox.commonEnv" -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ required "database.existingSecret is required" .Values.database.existingSecret | quote }}
      key: {{ .Values.database.key | quote }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ required "redis.existingSecret is required: events, Socket.IO rooms and rate limits cross processes through Redis" .Values.redis.existingSecret | quote }}
      key: {{ .Values.redis.key | quote }}
- name: MAILBOX_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ required "serverKey.existingSecret is required (the same key on every replica)" .Values.serverKey.existingSecret | quote }}
      key: {{ .Values.serverKey.key | quote }}
- name: MAILBOX_DATA_DIR
  value: /var/lib/mailbox
- name: BLOB_STORE
  value: postgres
- name: HOST
  value: "0.0.0.0"
- name: PORT
  value: "8080"
{{- if .Values.tracing.otlpEndpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ .Values.tracing.otlpEndpoint | quote }}
- name: OTEL_TRACES_EXPORTER
  value: otlp
{{- end }}
{{- /* Behind the chart's Ingress the client address comes from X-Forwarded-For through the
       trusted hops (docs/api.md, "Client address"); a TRUST_PROXY in config wins. */}}
{{- if .Values.ingress.enabled }}
{{- if not (hasKey (.Values.config | default dict) "TRUST_PROXY") }}
- name: TRUST_PROXY
  value: {{ .Values.ingress.trustProxy | quote }}
{{- end }}
{{- end }}
{{- range $name, $value := .Values.config }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "mailbox.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.securityContext.runAsUser }}
runAsGroup: {{ .Values.securityContext.runAsUser }}
fsGroup: {{ .Values.securityContext.runAsUser }}
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "mailbox.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
{{- end }}

{{/* Scheduling knobs of one component; args: dict "values" .Values.api. */}}
{{- define "mailbox.scheduling" -}}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
