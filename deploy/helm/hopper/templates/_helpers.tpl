{{/* The chart's name, or nameOverride. */}}
{{- define "hopper.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's objects' name: fullnameOverride, or the release name with the chart's. */}}
{{- define "hopper.fullname" -}}
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

{{- define "hopper.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "hopper.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "hopper.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hopper.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* SQLite unless a PostgreSQL URL is given. */}}
{{- define "hopper.sqlite" -}}
{{- if not .Values.database.postgres.existingSecret }}true{{ end }}
{{- end }}

{{/* The Secret holding the bootstrap admin key, or nothing when there is none. */}}
{{- define "hopper.bootstrapSecret" -}}
{{- if .Values.bootstrapKey.existingSecret }}
{{- .Values.bootstrapKey.existingSecret }}
{{- else if .Values.bootstrapKey.create }}
{{- printf "%s-bootstrap-key" (include "hopper.fullname" .) }}
{{- end }}
{{- end }}

{{/* The scheme of the server and its probes. */}}
{{- define "hopper.scheme" -}}
{{- if .Values.tls.existingSecret }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}

{{/* Values that cannot work together fail the rendering with a message saying why. */}}
{{- define "hopper.validate" -}}
{{- if and (include "hopper.sqlite" .) (gt (int .Values.replicaCount) 1) }}
{{- fail (printf "replicaCount is %d, but without database.postgres.existingSecret the server stores jobs in a SQLite file, which only one replica may open: set replicaCount to 1, or give a PostgreSQL URL" (int .Values.replicaCount)) }}
{{- end }}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.serviceMonitor.keySecret.name) }}
{{- fail "metrics.serviceMonitor.enabled needs metrics.serviceMonitor.keySecret.name: /metrics answers only to an API key with the read scope (hopper keys create --name prometheus --scope read), kept in a Secret" }}
{{- end }}
{{- end }}
