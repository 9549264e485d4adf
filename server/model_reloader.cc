#include "server/model_reloader.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/status_reason.h"
#include "base/thread_sched.h"
#include "ranking/model_check.h"
#include "spdlog/spdlog.h"

namespace rankwire {
namespace {

int64_t NowUnixMs() { return absl::ToUnixMillis(absl::Now()); }

}  // namespace

bool ModelReloader::Fingerprint::operator==(const Fingerprint& o) const { return files == o.files; }

ModelReloader::ModelReloader(ModelReloadOptions options, MetricsRegistry* registry)
    : options_(std::move(options)), serving_(nullptr) {
  if (registry == nullptr) {
    metrics_ = std::make_unique<ModelMetrics>();
    return;
  }
  ModelSources sources;
  sources.generation = [this] {
    const std::shared_ptr<const ModelSet> set = serving_.Current();
    return set == nullptr ? 0.0 : static_cast<double>(set->generation());
  };
  sources.models_live = [] { return static_cast<double>(Model::Live()); };
  sources.serving = [this] {
    std::vector<ModelSources::Serving> out;
    const std::shared_ptr<const ModelSet> set = serving_.Current();
    if (set == nullptr) return out;
    for (const auto& m : set->models()) {
      out.push_back(
          {m->bucket, m->model->name(), m->model->version(), std::string(m->model->kind())});
    }
    return out;
  };
  sources.requests = [this] {
    std::vector<ModelSources::Requests> out;
    absl::MutexLock lock(&state_mu_);
    for (const auto& [key, counter] : requests_) {
      const size_t split = key.find('\0');
      out.push_back({key.substr(0, split), key.substr(split + 1), counter->value()});
    }
    return out;
  };
  metrics_ = ExportModels(registry, {std::begin(kRefusalReasons), std::end(kRefusalReasons)},
                          std::move(sources));
}

absl::StatusOr<std::unique_ptr<ModelReloader>> ModelReloader::Start(ModelReloadOptions options,
                                                                    MetricsRegistry* registry) {
  std::unique_ptr<ModelReloader> reloader(new ModelReloader(std::move(options), registry));
  {
    absl::MutexLock lock(&reloader->reload_mu_);
    // A file still being written when the server starts is read again a
    // few times before start-up fails.
    absl::StatusOr<bool> loaded;
    for (int attempt = 0; attempt < 5; ++attempt) {
      loaded = reloader->ReloadLocked("start-up", false);
      if (loaded.ok() || ReasonOf(loaded.status()) != "file_changed") break;
      absl::SleepFor(absl::Milliseconds(200));
    }
    reloader->started_ = true;
    if (!loaded.ok()) {
      if (reloader->options_.fail_fast) return loaded.status();
      reloader->CountFailure(loaded.status());
      spdlog::error(
          "no model loads from {} ({}): {}; serving nothing (health NOT_SERVING, Rank "
          "UNAVAILABLE) until one does, looking again every {} and on SIGHUP",
          reloader->options_.source, RefusalReason(loaded.status()),
          std::string(loaded.status().message()),
          absl::FormatDuration(reloader->options_.poll_interval));
    }
  }
  reloader->poller_ = std::thread([r = reloader.get()] { r->PollLoop(); });
  return reloader;
}

ModelReloader::~ModelReloader() {
  {
    absl::MutexLock lock(&poll_mu_);
    stop_ = true;
  }
  if (poller_.joinable()) poller_.join();
}

std::shared_ptr<Counter> ModelReloader::RequestCounter(const std::string& bucket,
                                                       const std::string& version) {
  absl::MutexLock lock(&state_mu_);
  const std::string key = absl::StrCat(bucket, absl::string_view("\0", 1), version);
  std::shared_ptr<Counter>& counter = requests_[key];
  if (counter == nullptr) counter = std::make_shared<Counter>();
  // Series of models no set holds any more go once there are many (each
  // reload of a new version adds one).
  if (requests_.size() > 64) {
    for (auto it = requests_.begin(); it != requests_.end();) {
      auto next = std::next(it);
      if (it->second.use_count() == 1 && it->first != key) requests_.erase(it);
      it = next;
    }
  }
  return counter;
}

absl::StatusOr<std::shared_ptr<const ModelSet>> ModelReloader::Build(const ModelPlan& plan,
                                                                     const ModelSet* current,
                                                                     uint64_t generation) {
  std::vector<std::shared_ptr<const ServedModel>> models;
  for (const ModelPlan::Entry& entry : plan.entries) {
    // A model whose file did not change is kept (with its load time).
    std::shared_ptr<const Model> reused;
    std::shared_ptr<const ServedModel> same;
    absl::StatusOr<FileStamp> stamp = StampOf(entry.path);
    if (current != nullptr && stamp.ok()) {
      for (const auto& m : current->models()) {
        if (m->path != entry.path || m->stamp != *stamp) continue;
        reused = m->model;
        if (m->bucket == entry.bucket && m->percent == entry.percent) same = m;
      }
    }
    if (reused != nullptr) {
      // The manifest's feature lists may have changed.
      RETURN_IF_ERROR(
          CheckSupplied(*reused, plan.supplied, options_.load.allow_unsupplied_features));
    }
    if (same != nullptr) {
      models.push_back(same);
      continue;
    }
    const auto started = std::chrono::steady_clock::now();
    FileStamp loaded_stamp = stamp.ok() ? *stamp : FileStamp{};
    const ModelPlan::Entry* used = &entry;
    if (reused == nullptr) {
      absl::StatusOr<LoadedModel> loaded = LoadChecked(entry, plan);
      // With no model serving, an older version that loads beats none: a
      // replica (re)started while a broken version is the newest must not
      // crash-loop. With one serving, the refusal keeps it serving instead.
      for (size_t i = 0; !loaded.ok() && current == nullptr && i < entry.older.size(); ++i) {
        absl::StatusOr<LoadedModel> older = LoadChecked(entry.older[i], plan);
        if (!older.ok()) continue;
        CountFailure(loaded.status());
        spdlog::error("model {} refused ({}): {}; starting on the older version {}", entry.path,
                      RefusalReason(loaded.status()), std::string(loaded.status().message()),
                      entry.older[i].path);
        used = &entry.older[i];
        loaded = std::move(older);
      }
      if (!loaded.ok()) return loaded.status();
      reused = std::move(loaded->model);
      loaded_stamp = loaded->stamp;
    }
    auto served = std::make_shared<ServedModel>(entry.bucket, entry.percent, used->path,
                                                loaded_stamp, reused);
    served->loaded_unix_ms = NowUnixMs();
    served->load_ms = static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                std::chrono::steady_clock::now() - started)
                                                .count());
    served->requests = RequestCounter(entry.bucket, reused->full_version());
    models.push_back(std::move(served));
  }
  if (!plan.bucketed) return ModelSet::Single(std::move(models.front()), generation);
  absl::StatusOr<std::shared_ptr<const ModelSet>> set =
      ModelSet::Buckets(std::move(models), generation);
  if (!set.ok()) return WithReason(set.status(), "manifest");
  return set;
}

absl::StatusOr<LoadedModel> ModelReloader::LoadChecked(const ModelPlan::Entry& entry,
                                                       const ModelPlan& plan) const {
  ASSIGN_OR_RETURN(LoadedModel loaded, LoadModel(entry, options_.load));
  RETURN_IF_ERROR(CheckModel(*loaded.model, plan.supplied, options_.load.allow_unsupplied_features,
                             options_.limits));
  return loaded;
}

void ModelReloader::CountFailure(const absl::Status& status) {
  const std::string reason = RefusalReason(status);
  if (Counter* failures = metrics_->FailuresFor(reason); failures != nullptr) {
    failures->Increment();
  }
  absl::MutexLock lock(&state_mu_);
  last_failure_reason_ = reason;
  last_failure_ = std::string(status.message());
  last_failure_unix_ms_ = NowUnixMs();
}

absl::StatusOr<bool> ModelReloader::ReloadLocked(absl::string_view trigger, bool poll) {
  const auto started = std::chrono::steady_clock::now();
  const std::shared_ptr<const ModelSet> current = serving_.Current();
  absl::StatusOr<ModelPlan> plan = PlanModels(options_.source);
  Fingerprint fingerprint;
  if (plan.ok()) {
    fingerprint.files = plan->watched;
    for (const ModelPlan::Entry& entry : plan->entries) {
      fingerprint.files.emplace_back(entry.path, StampOf(entry.path).value_or(FileStamp{}));
    }
  } else {
    fingerprint.files.emplace_back(absl::StrCat("error: ", plan.status().message()), FileStamp{});
  }
  if (current != nullptr && fingerprint == loaded_) {
    // Nothing changed. A poll says nothing; an operator's SIGHUP or RPC is
    // told so.
    if (!poll) LogUnchanged(trigger, *current);
    return false;
  }
  // A poll does not retry what failed until something changes.
  if (poll && has_failed_ && fingerprint == failed_) return false;

  const uint64_t generation = current == nullptr ? 1 : current->generation() + 1;
  absl::StatusOr<std::shared_ptr<const ModelSet>> next =
      plan.ok() ? Build(*plan, current.get(), generation)
                : absl::StatusOr<std::shared_ptr<const ModelSet>>(plan.status());
  if (!next.ok()) {
    has_failed_ = true;
    failed_ = std::move(fingerprint);
    // Logged before it is counted and kept for GetModels, so whoever sees
    // the refusal there finds its line in the log.
    if (current == nullptr) {
      // Start() reports its own failure; later ones, with still no model
      // serving, are reported here.
      if (started_) {
        spdlog::error("models ({}): still no model loads, reason {}: {}", std::string(trigger),
                      RefusalReason(next.status()), std::string(next.status().message()));
        CountFailure(next.status());
      }
      return next.status();
    }
    spdlog::error("model reload ({}) refused, reason {}: {}; still serving {}",
                  std::string(trigger), RefusalReason(next.status()),
                  std::string(next.status().message()), current->Summary());
    CountFailure(next.status());
    return next.status();
  }
  if (current != nullptr && current->bucketed() == (*next)->bucketed() &&
      current->models() == (*next)->models()) {
    // Something was touched, but every model and share is as it was (a
    // refused file removed, a manifest comment edited): nothing to swap.
    loaded_ = std::move(fingerprint);
    has_failed_ = false;
    LogUnchanged(trigger, *current);
    return false;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // Logged before the swap, so whoever sees the new models (a response,
  // GetModels) finds the line. The last refusal stays on record (GetModels)
  // until a newer one replaces it: a good load does not hide a bad one.
  spdlog::info("models ({}): generation {} serving {} from {}, loaded in {:.1f} ms{}",
               std::string(trigger), generation, (*next)->Summary(), options_.source, seconds * 1e3,
               current == nullptr ? "" : absl::StrCat(" (was ", current->Summary(), ")"));
  serving_.Swap(*next);
  loaded_ = std::move(fingerprint);
  has_failed_ = false;
  metrics_->load_seconds.store(seconds);
  if (current != nullptr && metrics_->reloads != nullptr) metrics_->reloads->Increment();
  if (current == nullptr && options_.on_first_model) options_.on_first_model();
  return true;
}

void ModelReloader::LogUnchanged(absl::string_view trigger, const ModelSet& current) {
  spdlog::info("models ({}): unchanged, generation {} serving {} from {}", std::string(trigger),
               current.generation(), current.Summary(), options_.source);
}

absl::StatusOr<bool> ModelReloader::Reload(absl::string_view trigger) {
  absl::MutexLock lock(&reload_mu_);
  return ReloadLocked(trigger, false);
}

absl::StatusOr<bool> ModelReloader::PollOnce() {
  absl::MutexLock lock(&reload_mu_);
  return ReloadLocked("poll", true);
}

void ModelReloader::RequestReload(absl::string_view trigger) {
  absl::MutexLock lock(&poll_mu_);
  requested_ = std::string(trigger);
}

void ModelReloader::PollLoop() {
  SetThreadName("rankwire-models");
  // Loading competes with ranking for the CPU: it yields to it.
  SetThreadNice(10).IgnoreError();
  const absl::Duration interval = options_.poll_interval;
  while (true) {
    std::string trigger;
    {
      absl::MutexLock lock(&poll_mu_);
      auto wake = [this]()
                      ABSL_SHARED_LOCKS_REQUIRED(poll_mu_) { return stop_ || !requested_.empty(); };
      // Mutex conditions are evaluated again whenever poll_mu_ is released,
      // so RequestReload and the destructor wake this at once.
      poll_mu_.AwaitWithTimeout(absl::Condition(&wake), interval > absl::ZeroDuration()
                                                            ? interval
                                                            : absl::InfiniteDuration());
      if (stop_) return;
      trigger = requested_;
      requested_.clear();
    }
    if (trigger.empty()) {
      PollOnce().IgnoreError();
    } else {
      Reload(trigger).IgnoreError();
    }
  }
}

rank::v1::GetModelsResponse ModelReloader::Describe() const {
  rank::v1::GetModelsResponse out;
  const std::shared_ptr<const ModelSet> set = serving_.Current();
  out.set_source(options_.source);
  out.set_generation(set == nullptr ? 0 : set->generation());
  static const std::vector<std::shared_ptr<const ServedModel>> kNone;
  for (const auto& m : set == nullptr ? kNone : set->models()) {
    rank::v1::ServedModel* s = out.add_models();
    s->set_bucket(m->bucket);
    s->set_percent(static_cast<uint32_t>(m->percent));
    s->set_name(m->model->name());
    s->set_version(m->model->version());
    s->set_kind(std::string(m->model->kind()));
    s->set_path(m->path);
    s->set_loaded_unix_ms(m->loaded_unix_ms);
    s->set_load_ms(m->load_ms);
    const ModelInputs& in = m->model->inputs();
    for (const std::string& f : in.item) s->add_item_features(f);
    for (const std::string& f : in.user) s->add_user_features(f);
    for (const std::string& f : in.context) s->add_context_features(f);
  }
  absl::MutexLock lock(&state_mu_);
  out.set_last_failure_reason(last_failure_reason_);
  out.set_last_failure(last_failure_);
  out.set_last_failure_unix_ms(last_failure_unix_ms_);
  return out;
}

}  // namespace rankwire
