// Copyright 2026 SMoE Lab authors.
#include "cli/deploy_cmd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/child_process.h"
#include "common/api_token.h"
#include "coordinator/tokens.h"

namespace smoe::cli {
namespace {

namespace fs = std::filesystem;

constexpr int kOk = 0;
constexpr int kUsage = 64;
constexpr int kNoInput = 66;
constexpr int kUnavailable = 69;
constexpr int kSoftware = 70;
constexpr int kNoPerm = 77;

// Images as the base names them after its `images:` (deploy/k8s/base).
constexpr char kDefaultRepo[] = "registry.example.com/smoe-lab";
constexpr char kDefaultTag[] = "0.1.0";

bool IsManifestsDir(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p / "base" / "kustomization.yaml", ec);
}

// --manifests-dir, else $SMOE_DEPLOY_DIR, else deploy/k8s of the source tree
// the binary was built in (<tree>/<build>/bin/smoe), else an installed
// <prefix>/share/smoe/deploy/k8s, else ./deploy/k8s.
std::string FindManifestsDir(const std::string& flag) {
  if (!flag.empty()) return IsManifestsDir(flag) ? flag : "";
  if (const char* env = std::getenv("SMOE_DEPLOY_DIR")) {
    if (IsManifestsDir(env)) return env;
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates;
  if (!ec) {
    const fs::path bin = exe.parent_path();
    candidates.push_back(bin.parent_path().parent_path() / "deploy" / "k8s");
    candidates.push_back(bin.parent_path() / "share" / "smoe" / "deploy" /
                         "k8s");
  }
  candidates.push_back(fs::current_path(ec) / "deploy" / "k8s");
  for (const fs::path& c : candidates) {
    if (IsManifestsDir(c)) return c.string();
  }
  return "";
}

bool WriteFile(const fs::path& path, const std::string& text, mode_t mode) {
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return ::close(fd) == 0;
}

// Runs argv (PATH lookup), returns its exit status (127: not found), stdout
// in *out; stderr passes through.
int RunCapture(const std::vector<std::string>& argv, std::string* out) {
  ChildSpec spec;
  spec.argv = argv;
  spec.search_path = true;
  spec.report_exec_error = false;
  return RunAndCapture(std::move(spec), out);
}

// Removes the temporary directory on every return path.
struct TempDir {
  fs::path path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

}  // namespace

CLI::App* AddDeployCommand(CLI::App* app, DeployRenderOptions* opts) {
  CLI::App* deploy =
      app->add_subcommand("deploy", "Kubernetes deployment (deploy/k8s)");
  deploy->require_subcommand(1);
  CLI::App* render = deploy->add_subcommand(
      "render",
      "Print Kubernetes manifests for N workers x G GPUs (kubectl kustomize "
      "of deploy/k8s/overlays/<overlay>)");
  render->add_option("--workers", opts->workers, "Worker pods")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  render
      ->add_option("--gpus-per-worker", opts->gpus_per_worker,
                   "nvidia.com/gpu per worker pod (>= the sweeps' ep_size)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  render
      ->add_option("--overlay", opts->overlay,
                   "Overlay under deploy/k8s/overlays (single-node, "
                   "gpu-cluster, or your own)")
      ->capture_default_str();
  render->add_option("--image-repo", opts->image_repo,
                     std::string("Image repository (default ") + kDefaultRepo +
                         " when --image-tag is given)");
  render->add_option("--image-tag", opts->image_tag,
                     std::string("Image tag (default ") + kDefaultTag +
                         " when --image-repo is given)");
  render
      ->add_option("--token-file", opts->token_file,
                   "Admin API token file for the Secret; created (mode 0600) "
                   "if missing. The workers' worker-role token is FILE-worker "
                   "(created too)")
      ->required();
  render->add_option("--manifests-dir", opts->manifests_dir,
                     "deploy/k8s directory (default: $SMOE_DEPLOY_DIR, the "
                     "source tree of this binary, ./deploy/k8s)");
  render->add_option("--kubectl", opts->kubectl, "kubectl binary")
      ->capture_default_str();
  render->add_option("-o,--output", opts->output,
                     "Write the manifests here (mode 0600: they hold the "
                     "token) instead of stdout");
  render->add_flag("--kustomization-only", opts->kustomization_only,
                   "Print the generated kustomization.yaml instead");
  return render;
}

bool OverlayHasWorkerDoctor(const std::string& kustomization_text) {
  std::istringstream in(kustomization_text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const size_t hit = line.find("components/worker-doctor");
    if (hit != std::string::npos && line.find('#') > hit) return true;
  }
  return false;
}

std::string RenderKustomization(const DeployRenderOptions& opts,
                                const std::string& overlay_path,
                                bool worker_doctor) {
  std::ostringstream k;
  const std::string g = std::to_string(opts.gpus_per_worker);
  k << "# Generated by `smoe deploy render`: " << opts.workers << " workers x "
    << g << " GPUs on overlay " << opts.overlay << ".\n"
    << "apiVersion: kustomize.config.k8s.io/v1beta1\n"
    << "kind: Kustomization\n"
    << "resources:\n"
    << "  - " << overlay_path << "\n"
    << "replicas:\n"
    << "  - name: smoe-worker\n"
    << "    count: " << opts.workers << "\n"
    << "configMapGenerator:\n"
    << "  - name: smoe-worker\n"
    << "    namespace: smoe\n"
    << "    behavior: merge\n"
    << "    literals:\n"
    << "      - SMOE_GPUS=" << g << "\n"
    << "patches:\n"
    << "  - target:\n"
    << "      kind: StatefulSet\n"
    << "      name: smoe-worker\n"
    << "    patch: |-\n"
    << "      - op: add\n"
    << "        path: /spec/template/spec/containers/0/resources/requests/"
       "nvidia.com~1gpu\n"
    << "        value: \"" << g << "\"\n"
    << "      - op: add\n"
    << "        path: /spec/template/spec/containers/0/resources/limits/"
       "nvidia.com~1gpu\n"
    << "        value: \"" << g << "\"\n";
  if (!opts.image_repo.empty() || !opts.image_tag.empty()) {
    const std::string repo =
        opts.image_repo.empty() ? kDefaultRepo : opts.image_repo;
    const std::string tag =
        opts.image_tag.empty() ? kDefaultTag : opts.image_tag;
    const std::string coord = repo + "/smoe-coordinator:" + tag;
    const std::string worker = repo + "/smoe-worker:" + tag;
    k << "  - target:\n"
      << "      kind: Deployment\n"
      << "      name: smoe-coordinator\n"
      << "    patch: |-\n"
      << "      - op: replace\n"
      << "        path: /spec/template/spec/containers/0/image\n"
      << "        value: " << coord << "\n"
      << "      - op: replace\n"
      << "        path: /spec/template/spec/initContainers/0/image\n"
      << "        value: " << coord << "\n"
      << "  - target:\n"
      << "      kind: StatefulSet\n"
      << "      name: smoe-worker\n"
      << "    patch: |-\n"
      << "      - op: replace\n"
      << "        path: /spec/template/spec/containers/0/image\n"
      << "        value: " << worker << "\n";
  }
  if (worker_doctor) {
    // After the patches above (replacements run last): the doctor init
    // container checks the GPUs and the image the worker gets.
    const std::string select =
        "      - select:\n"
        "          kind: StatefulSet\n"
        "          name: smoe-worker\n"
        "        fieldPaths:\n";
    k << "replacements:\n"
      << "  - source:\n"
      << "      kind: StatefulSet\n"
      << "      name: smoe-worker\n"
      << "      fieldPath: spec.template.spec.containers.[name=worker].image\n"
      << "    targets:\n"
      << select
      << "          - spec.template.spec.initContainers.[name=doctor].image\n"
      << "  - source:\n"
      << "      kind: StatefulSet\n"
      << "      name: smoe-worker\n"
      << "      fieldPath: spec.template.spec.containers.[name=worker]."
         "resources.limits.[nvidia.com/gpu]\n"
      << "    targets:\n"
      << select
      << "          - spec.template.spec.initContainers.[name=doctor]."
         "resources.requests.[nvidia.com/gpu]\n"
      << "          - spec.template.spec.initContainers.[name=doctor]."
         "resources.limits.[nvidia.com/gpu]\n";
  }
  return k.str();
}

int RunDeployRender(const DeployRenderOptions& opts, std::ostream& out,
                    std::ostream& err) {
  const std::string prefix = "smoe deploy render: ";
  if (opts.overlay.empty() ||
      opts.overlay.find_first_of("/\\") != std::string::npos ||
      opts.overlay[0] == '.') {
    err << prefix << "--overlay must be a directory name under overlays/\n";
    return kUsage;
  }
  const std::string dir = FindManifestsDir(opts.manifests_dir);
  if (dir.empty()) {
    err << prefix
        << "deploy/k8s not found (pass --manifests-dir or set "
           "SMOE_DEPLOY_DIR)\n";
    return kNoInput;
  }
  if (!fs::exists(fs::path(dir) / "overlays" / opts.overlay /
                  "kustomization.yaml")) {
    err << prefix << "no overlay '" << opts.overlay << "' in " << dir
        << "/overlays\n";
    return kNoInput;
  }
  bool created = false;
  absl::StatusOr<std::string> token =
      LoadOrCreateTokenFile(opts.token_file, &created);
  if (!token.ok()) {
    err << prefix << token.status().message() << "\n";
    return kNoPerm;
  }
  if (created) {
    err << prefix << "created a new API token in " << opts.token_file
        << " (mode 0600)\n";
  }

  // The workers get a worker-role token of their own (docs/roles.md), kept
  // next to the admin token so renders are stable; the coordinator learns
  // its hash from the `tokens` Secret.
  const std::string worker_token_file = opts.token_file + "-worker";
  absl::StatusOr<std::string> worker_token =
      LoadOrCreateTokenFile(worker_token_file, &created);
  if (!worker_token.ok()) {
    err << prefix << worker_token.status().message() << "\n";
    return kNoPerm;
  }
  if (created) {
    err << prefix << "created the workers' worker-role token in "
        << worker_token_file << " (mode 0600)\n";
  }
  coordinator::TokenEntry worker_entry;
  worker_entry.name = "k8s-workers";
  worker_entry.role = coordinator::Role::kWorker;
  worker_entry.sha256_hex = coordinator::TokenSha256Hex(*worker_token);
  {
    struct stat st;
    if (::stat(worker_token_file.c_str(), &st) == 0) {
      worker_entry.created = absl::FromUnixSeconds(st.st_mtime);
    }
  }

  TempDir tmp;
  std::string tmpl =
      (fs::temp_directory_path() / "smoe-render-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    err << prefix << "mkdtemp: " << std::strerror(errno) << "\n";
    return kSoftware;
  }
  tmp.path = tmpl;
  std::error_code ec;
  fs::copy(dir, tmp.path / "k8s",
           fs::copy_options::recursive | fs::copy_options::skip_symlinks, ec);
  const fs::path overlay_dir = tmp.path / "k8s" / "overlays" / opts.overlay;
  const fs::path render_dir = tmp.path / "render";
  fs::create_directory(render_dir, ec);
  if (ec) {
    err << prefix << "copying " << dir << ": " << ec.message() << "\n";
    return kSoftware;
  }
  fs::remove(overlay_dir / "token", ec);
  std::string overlay_text;
  {
    std::ifstream in(overlay_dir / "kustomization.yaml");
    std::stringstream ss;
    ss << in.rdbuf();
    overlay_text = ss.str();
  }
  const std::string kustomization =
      RenderKustomization(opts, "../k8s/overlays/" + opts.overlay,
                          OverlayHasWorkerDoctor(overlay_text));
  // The overlay's own role tokens (viewers made with `smoe token create
  // --data-dir` there) are kept; the workers' entry is this render's.
  auto overlay_tokens =
      coordinator::ReadTokensFile((overlay_dir / "tokens").string());
  if (!overlay_tokens.ok()) {
    err << prefix << overlay_tokens.status().message() << "\n";
    return kNoInput;
  }
  std::vector<coordinator::TokenEntry> entries;
  for (const coordinator::TokenEntry& e : *overlay_tokens) {
    if (e.name != worker_entry.name) entries.push_back(e);
  }
  entries.push_back(worker_entry);
  const std::string tokens_text = coordinator::FormatTokensFile(entries);
  fs::remove(overlay_dir / "worker-token", ec);
  fs::remove(overlay_dir / "tokens", ec);
  if (!WriteFile(overlay_dir / "token", *token + "\n", 0600) ||
      !WriteFile(overlay_dir / "worker-token", *worker_token + "\n", 0600) ||
      !WriteFile(overlay_dir / "tokens", tokens_text, 0600) ||
      !WriteFile(render_dir / "kustomization.yaml", kustomization, 0644)) {
    err << prefix << "writing " << tmp.path << ": " << std::strerror(errno)
        << "\n";
    return kSoftware;
  }
  std::string text;
  if (opts.kustomization_only) {
    text = kustomization;
  } else {
    const int rc =
        RunCapture({opts.kubectl, "kustomize", render_dir.string()}, &text);
    if (rc != 0) {
      err << prefix << "'" << opts.kubectl << " kustomize' "
          << (rc == 127 ? "not found (install kubectl >= 1.27)"
                        : "failed (exit " + std::to_string(rc) + ")")
          << "\n";
      return kUnavailable;
    }
  }
  if (opts.output.empty()) {
    out << text;
    out.flush();
    return out ? kOk : kSoftware;
  }
  if (!WriteFile(opts.output, text, 0600)) {
    err << prefix << "writing " << opts.output << ": " << std::strerror(errno)
        << "\n";
    return kSoftware;
  }
  return kOk;
}

}  // namespace smoe::cli
