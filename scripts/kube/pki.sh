# shellcheck shell=bash
# pki.sh: the cluster's certificates and kubeconfigs, made with openssl and kubectl the first time
# the cluster starts on a machine (kept in $KUBE_PKI until kube-down). Sourced by kube-offline.sh.
#
# One CA signs every serving and client certificate; a second one, the front proxy's, signs the
# client certificate the API server presents to aggregated APIs (metrics-server), as kubeadm
# arranges it. Identities follow the API server's built-in RBAC roles:
#   admin            O=system:masters                 kubectl, the tests
#   controller-manager, scheduler, kube-proxy  CN=system:kube-*   their ClusterRoleBindings
#   kubelet          CN=system:node:likes-kube, O=system:nodes (the Node authorizer)
#   apiserver-kubelet-client  O=system:masters      logs, exec and metrics through the kubelet

# kube_cert NAME SUBJECT [SANS] [CA]: a key and a certificate signed by CA (default ca), valid
# for a year, for client and server use; SANS is an openssl subjectAltName list.
kube_cert() {
  local name=$1 subject=$2 sans=${3:-} ca=${4:-ca} ext
  [[ -s $KUBE_PKI/$name.crt ]] && return 0
  ext=$(mktemp)
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=serverAuth,clientAuth"
    [[ -n $sans ]] && echo "subjectAltName=$sans"
  } >"$ext"
  openssl req -new -newkey rsa:2048 -nodes -keyout "$KUBE_PKI/$name.key" -subj "$subject" \
    -out "$KUBE_PKI/$name.csr" 2>/dev/null
  openssl x509 -req -in "$KUBE_PKI/$name.csr" -CA "$KUBE_PKI/$ca.crt" -CAkey "$KUBE_PKI/$ca.key" \
    -CAcreateserial -days 365 -extfile "$ext" -out "$KUBE_PKI/$name.crt" 2>/dev/null
  rm -f "$ext" "$KUBE_PKI/$name.csr"
}

kube_ca() {
  local name=$1
  [[ -s $KUBE_PKI/$name.crt ]] && return 0
  openssl req -x509 -new -newkey rsa:2048 -nodes -days 3650 -subj "/CN=likes-kube-$name" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
    -keyout "$KUBE_PKI/$name.key" -out "$KUBE_PKI/$name.crt" 2>/dev/null
}

# kube_kubeconfig NAME CERT: a kubeconfig for a client certificate.
kube_kubeconfig() {
  local file=$KUBE_STATE/$1.kubeconfig cert=$2
  [[ -s $file ]] && return 0
  KUBECONFIG=$file.tmp kubectl config set-cluster likes-kube --server="$KUBE_API" \
    --certificate-authority="$KUBE_PKI/ca.crt" --embed-certs >/dev/null
  KUBECONFIG=$file.tmp kubectl config set-credentials "$1" --client-certificate="$KUBE_PKI/$cert.crt" \
    --client-key="$KUBE_PKI/$cert.key" --embed-certs >/dev/null
  KUBECONFIG=$file.tmp kubectl config set-context likes-kube --cluster=likes-kube --user="$1" >/dev/null
  KUBECONFIG=$file.tmp kubectl config use-context likes-kube >/dev/null
  mv "$file.tmp" "$file"
}

kube_pki() {
  mkdir -p "$KUBE_PKI"
  chmod 0700 "$KUBE_PKI"
  kube_ca ca
  kube_ca front-proxy-ca
  kube_cert apiserver /CN=kube-apiserver "IP:$KUBE_NODE_IP,IP:$KUBE_API_SERVICE_IP,IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  kube_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  kube_cert front-proxy-client /CN=front-proxy-client "" front-proxy-ca
  kube_cert admin "/O=system:masters/CN=likes-kube-admin"
  kube_cert controller-manager /CN=system:kube-controller-manager
  kube_cert scheduler /CN=system:kube-scheduler
  kube_cert kube-proxy /CN=system:kube-proxy
  kube_cert kubelet "/O=system:nodes/CN=system:node:$KUBE_NODE" "IP:$KUBE_NODE_IP,DNS:$KUBE_NODE"
  if [[ ! -s $KUBE_PKI/sa.key ]]; then
    openssl genrsa -out "$KUBE_PKI/sa.key" 2048 2>/dev/null
    openssl rsa -in "$KUBE_PKI/sa.key" -pubout -out "$KUBE_PKI/sa.pub" 2>/dev/null
  fi
  kube_kubeconfig admin admin
  kube_kubeconfig controller-manager controller-manager
  kube_kubeconfig scheduler scheduler
  kube_kubeconfig kube-proxy kube-proxy
  kube_kubeconfig kubelet kubelet
}
