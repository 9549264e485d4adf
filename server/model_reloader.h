// ModelReloader keeps the server's models current without a restart, the
// way TensorFlow Serving and Triton do: it loads what --model names
// (model/model_loader.h), and loads it again
//   - when asked (SIGHUP, or ModelService.ReloadModels when enabled), and
//   - when a poll (every --model_poll_interval) sees a file or directory it
//     was made from change: a rewrite, a rename over it, a new version, a
//     Kubernetes ConfigMap's symlink swap.
//
// A reload runs on the reloader's own thread (or the caller's), never on a
// serving thread: read and parse each changed file, check the model
// (CheckModel: the built-in check request), and only then swap the new
// ModelSet in, atomically; requests already running finish on the set they
// started with. Files whose stamp did not change keep their loaded model.
// A reload that fails changes nothing: the old models serve on, health
// stays SERVING, an error line names the file, line and reason, and
// rankwire_model_reload_failures_total{reason} counts it. A poll does not
// retry a failed plan until something in it changes again (or a SIGHUP).
// Every reload asked for (SIGHUP, the RPC) logs its outcome: the models
// loaded, "unchanged", or refused with the reason; a poll logs only what
// changes. Describe() keeps the last refusal, with its time, until a newer
// one replaces it (a later good load does not clear it).
//
// Metrics: rankwire_model_info{bucket,name,version,kind} (1 per loaded
// model), rankwire_model_reloads_total, rankwire_model_reload_failures_total
// {reason}, rankwire_model_load_seconds (the last successful load),
// rankwire_model_generation, rankwire_models_live (Model objects alive:
// old ones are freed once their last request and queued log line are
// done), rankwire_model_requests_total{bucket,version}; registered by
// ExportModels (metrics/server_metrics.h) from this reloader's callbacks.
//
// Thread safety: every method is safe from any thread; reloads are
// serialized.
#ifndef RANKWIRE_SERVER_MODEL_RELOADER_H_
#define RANKWIRE_SERVER_MODEL_RELOADER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "metrics/server_metrics.h"
#include "model/model_loader.h"
#include "rank/v1/rank.pb.h"
#include "ranking/model_set.h"

namespace rankwire {

struct ModelReloadOptions {
  // --model, resolved (ResolveModelPath).
  std::string source;
  ModelLoadOptions load;
  // The request limits the check request must fit.
  RequestLimits limits;
  // How often to look for changed files; zero: never (SIGHUP and the RPC
  // still reload).
  absl::Duration poll_interval = absl::Seconds(2);
  // Start-up when no model loads: false (the default) starts with no model
  // (Current() null: the server reports NOT_SERVING and refuses Rank with
  // UNAVAILABLE) and keeps polling until one loads; true fails Start().
  bool fail_fast = false;
  // Called (on the loading thread, with no lock of the reloader's held by
  // its caller) after a set is swapped in where there was none.
  std::function<void()> on_first_model;
};

class ModelReloader {
 public:
  // Loads the models and starts polling. A version directory whose newest
  // version is refused starts on the newest older one that loads. When
  // nothing loads: the error with `fail_fast`; otherwise a reloader with no
  // model (Current() null) that keeps polling, the refusal counted and kept
  // for Describe(). `registry` may be null.
  static absl::StatusOr<std::unique_ptr<ModelReloader>> Start(ModelReloadOptions options,
                                                              MetricsRegistry* registry);
  ~ModelReloader();
  ModelReloader(const ModelReloader&) = delete;
  ModelReloader& operator=(const ModelReloader&) = delete;

  // What the handler reads the current set from (null until a model loads).
  const ServingModels* serving() const { return &serving_; }
  std::shared_ptr<const ModelSet> Current() const { return serving_.Current(); }

  // Makes the plan again and loads what changed, now, on this thread:
  // true if a new set was swapped in, false if nothing had changed; the
  // error (with its reason) if the new models were refused. `trigger`
  // ("SIGHUP", "poll", "rpc") is for the log line.
  absl::StatusOr<bool> Reload(absl::string_view trigger);
  // One look, as the poll thread takes every --model_poll_interval, now,
  // on this thread: loads what changed (true), but does not retry a
  // refused plan until something in it changes again, and logs only a
  // change.
  absl::StatusOr<bool> PollOnce();
  // Asks the reloader's thread to Reload() soon; returns at once (for a
  // signal-waiting thread).
  void RequestReload(absl::string_view trigger);

  // The loaded models, and the last refused load (kept, with its time,
  // until a newer refusal replaces it).
  rank::v1::GetModelsResponse Describe() const;

 private:
  ModelReloader(ModelReloadOptions options, MetricsRegistry* registry);
  struct Fingerprint {
    std::vector<std::pair<std::string, FileStamp>> files;
    bool operator==(const Fingerprint& o) const;
  };
  // Loads the plan into a new set (reusing unchanged models of `current`).
  absl::StatusOr<std::shared_ptr<const ModelSet>> Build(const ModelPlan& plan,
                                                        const ModelSet* current,
                                                        uint64_t generation)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);
  // Reads, parses and checks one entry's file.
  absl::StatusOr<LoadedModel> LoadChecked(const ModelPlan::Entry& entry,
                                          const ModelPlan& plan) const;
  absl::StatusOr<bool> ReloadLocked(absl::string_view trigger, bool poll)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);
  void CountFailure(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reload_mu_);
  // The outcome line of a reload that found nothing to change.
  void LogUnchanged(absl::string_view trigger, const ModelSet& current);
  std::shared_ptr<Counter> RequestCounter(const std::string& bucket, const std::string& version);
  void PollLoop();

  const ModelReloadOptions options_;
  ServingModels serving_;
  std::unique_ptr<ModelMetrics> metrics_;  // Registered in metrics/server_metrics.h.

  absl::Mutex reload_mu_;  // One reload at a time.
  Fingerprint loaded_ ABSL_GUARDED_BY(reload_mu_);
  Fingerprint failed_ ABSL_GUARDED_BY(reload_mu_);
  bool has_failed_ ABSL_GUARDED_BY(reload_mu_) = false;
  // Start() has returned: a failure with no model is counted and logged
  // by ReloadLocked from then on (Start() reports its own).
  bool started_ ABSL_GUARDED_BY(reload_mu_) = false;
  std::string failed_error_ ABSL_GUARDED_BY(reload_mu_);

  mutable absl::Mutex state_mu_;  // What Describe() reports.
  std::string last_failure_reason_ ABSL_GUARDED_BY(state_mu_);
  std::string last_failure_ ABSL_GUARDED_BY(state_mu_);
  int64_t last_failure_unix_ms_ ABSL_GUARDED_BY(state_mu_) = 0;
  // Per (bucket, version): requests ranked.
  absl::flat_hash_map<std::string, std::shared_ptr<Counter>> requests_ ABSL_GUARDED_BY(state_mu_);

  absl::Mutex poll_mu_;
  bool stop_ ABSL_GUARDED_BY(poll_mu_) = false;
  std::string requested_ ABSL_GUARDED_BY(poll_mu_);  // A pending RequestReload's trigger.
  std::thread poller_;
};

}  // namespace rankwire

#endif  // RANKWIRE_SERVER_MODEL_RELOADER_H_
