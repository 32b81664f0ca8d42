{{/* The name of every object: the release name, unless it already says dnspolicy-controller. */}}
{{- define "dnspolicy-controller.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "dnspolicy-controller.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{- define "dnspolicy-controller.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
The rules of one kind (ClusterRole or Role) from the role file controller-gen generates from the
+kubebuilder:rbac markers (copied into files/ by `make install-generate`), so the chart grants
exactly what the kustomize manifests grant: the full controller's, or the record side's alone.
*/}}
{{- define "dnspolicy-controller.generatedRules" -}}
{{- $file := ternary "files/role.yaml" "files/role-record-only.yaml" .root.Values.policyController.enabled -}}
{{- range $doc := regexSplit "(?m)^---$" (.root.Files.Get $file) -1 -}}
{{- $o := fromYaml $doc -}}
{{- if eq (get $o "kind") $.kind }}
{{ toYaml (get $o "rules") }}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "dnspolicy-controller.serviceAccountSubject" -}}
- kind: ServiceAccount
  name: {{ include "dnspolicy-controller.fullname" . }}
  namespace: {{ .Release.Namespace }}
{{- end -}}
