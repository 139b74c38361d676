// Package deploy holds the scanner's deployment: the container image
// (Dockerfile) and the Kubernetes manifests (kubernetes/, kustomize). Its
// tests decode every manifest strictly with the Kubernetes API types and
// check that the pieces are wired to each other and to the binary.
package deploy
