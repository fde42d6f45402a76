// Copyright 2026 SMoE Lab authors.
//
// File: cli/deploy_cmd.h
//
// `smoe deploy render`: Kubernetes manifests for N workers x G GPUs, rendered
// by kustomize from the same files a user applies with `kubectl apply -k`
// (deploy/k8s/overlays/<overlay>). It copies deploy/k8s to a temporary
// directory, adds the API token (read from --token-file, created there with
// mode 0600 when missing), writes a kustomization on top of the overlay that
// sets the worker replicas, nvidia.com/gpu and the workers' --gpus, and
// optionally the images, then prints `kubectl kustomize` of it.
//
//   DeployRenderOptions opts;
//   CLI::App* render = AddDeployCommand(&app, &opts);
//   ... app.parse(argc, argv) ...
//   if (render->parsed()) return RunDeployRender(opts, std::cout, std::cerr);
#ifndef SMOE_CLI_DEPLOY_CMD_H_
#define SMOE_CLI_DEPLOY_CMD_H_

#include <ostream>
#include <string>

#include "CLI/CLI.hpp"

namespace smoe::cli {

struct DeployRenderOptions {
  int workers = 1;          // --workers: worker pods (StatefulSet replicas)
  int gpus_per_worker = 1;  // --gpus-per-worker: nvidia.com/gpu per pod
  std::string overlay = "gpu-cluster";  // --overlay: deploy/k8s/overlays/<..>
  std::string image_repo;           // --image-repo; empty: the overlay's images
  std::string image_tag;            // --image-tag; empty: the overlay's images
  std::string token_file;           // --token-file (required)
  std::string manifests_dir;        // --manifests-dir; empty: search (see .cc)
  std::string kubectl = "kubectl";  // --kubectl
  std::string output;               // --output FILE; empty: stdout
  bool kustomization_only = false;  // --kustomization-only
};

// Adds `deploy` and `deploy render` (with their flags bound to `opts`) to
// `app`; returns the `render` subcommand.
CLI::App* AddDeployCommand(CLI::App* app, DeployRenderOptions* opts);

// The kustomization.yaml placed on top of `overlay_path` (a path relative to
// the kustomization's directory). With `worker_doctor` (the overlay includes
// components/worker-doctor) it also copies the worker container's image and
// nvidia.com/gpu into the `doctor` init container after its own patches.
// Pure; REQUIRES: opts.workers >= 1, opts.gpus_per_worker >= 1.
std::string RenderKustomization(const DeployRenderOptions& opts,
                                const std::string& overlay_path,
                                bool worker_doctor = false);

// True when a kustomization.yaml text lists components/worker-doctor on a
// line that is not a comment.
bool OverlayHasWorkerDoctor(const std::string& kustomization_text);

// Runs the command: manifests (or, with kustomization_only, the generated
// kustomization) to `out` or opts.output; diagnostics to `err`. Returns a
// sysexits code: 0, 64 (bad options), 66 (manifests or overlay not found),
// 69 (kubectl missing or failed), 77 (token file unusable), 70 (I/O).
int RunDeployRender(const DeployRenderOptions& opts, std::ostream& out,
                    std::ostream& err);

}  // namespace smoe::cli

#endif  // SMOE_CLI_DEPLOY_CMD_H_
