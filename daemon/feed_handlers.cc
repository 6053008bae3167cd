// The change-feed routes of ApiRouter: GET /v1/changefeed (pull, with
// long-poll) and GET /v1/feed.
#include <prometheus/gauge.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <optional>
#include <vector>

#include "daemon/api_router.h"
#include "daemon/feed_params.h"
#include "daemon/http_util.h"

namespace feedd {
namespace {

// `from=beginning` follows retention when it drops the page's start
// between reading the oldest LSN and reading the page.
constexpr int kRetentionRetries = 3;

HttpResponse FeedPageResponse(const FeedPage& page) {
  size_t size = 64;
  for (const ChangeRecord& record : page.records) size += record.envelope_json.size() + 1;
  std::string body;
  body.reserve(size);
  body += R"({"changes":[)";
  for (size_t i = 0; i < page.records.size(); ++i) {
    if (i > 0) body += ',';
    body += page.records[i].envelope_json;
  }
  body += R"(],"next":")" + std::to_string(page.next) + R"("})";
  return JsonResponse(200, std::move(body));
}

}  // namespace

// One GET /v1/changefeed request. When the first page is empty and the
// client asked to wait, it parks on a timer (on its own strand) and a
// DocumentStore head watch; the watch, or the router stopping, cancels the
// timer, and every wake-up re-reads the page. No thread blocks.
class ChangeFeedPoll : public std::enable_shared_from_this<ChangeFeedPoll> {
 public:
  ChangeFeedPoll(ApiRouter* router, FeedReadSpec spec, bool follow_retention,
                 std::chrono::milliseconds wait, Responder responder)
      : router_(router),
        spec_(std::move(spec)),
        follow_retention_(follow_retention),
        deadline_(std::chrono::steady_clock::now() + wait),
        timer_(boost::asio::make_strand(router->io_)),
        responder_(std::move(responder)) {}

  // Reads the first page on the calling thread; parks when it is empty and
  // there is time left.
  void Start() {
    FeedPage page;
    Status status = Read(&page);
    if (!status.ok() || !page.records.empty() || Expired() ||
        !router_->RegisterPoll(this, weak_from_this())) {
      return Finish(status, page);
    }
    registered_ = true;
    boost::asio::post(timer_.get_executor(), [self = shared_from_this()] { self->Park(); });
  }

  // From any thread: re-read the feed now.
  void Wake() {
    boost::asio::post(timer_.get_executor(),
                      [self = shared_from_this()] { self->timer_.cancel(); });
  }

 private:
  bool Expired() const { return std::chrono::steady_clock::now() >= deadline_; }

  // Reads the page at spec_.from and moves spec_.from to its `next`.
  Status Read(FeedPage* page) {
    DocumentStore* store = router_->store_;
    Status status = store->ReadFeed(spec_, page);
    for (int retry = 0; follow_retention_ && retry < kRetentionRetries &&
                        status.code() == ErrorCode::kLsnNotRetained;
         ++retry) {
      spec_.from = store->OldestRetainedLsn();
      *page = FeedPage();
      status = store->ReadFeed(spec_, page);
    }
    if (status.ok()) spec_.from = page->next;
    return status;
  }

  // On the strand.
  void Park() {
    if (router_->stopping_) {
      FeedPage empty;
      empty.next = spec_.from;
      return Finish(Status::Ok(), empty);
    }
    timer_.expires_at(deadline_);
    timer_.async_wait([self = shared_from_this()](boost::system::error_code) { self->OnWake(); });
    watch_ =
        router_->store_->OnHeadReached(spec_.from, [self = shared_from_this()] { self->Wake(); });
  }

  // On the strand: the deadline passed, or the watch or Stop() woke us.
  void OnWake() {
    router_->store_->CancelHeadWatch(watch_);
    FeedPage page;
    Status status = Read(&page);
    if (!status.ok() || !page.records.empty() || Expired() || router_->stopping_) {
      return Finish(status, page);
    }
    Park();
  }

  void Finish(const Status& status, const FeedPage& page) {
    if (registered_) router_->UnregisterPoll(this);
    registered_ = false;
    responder_.Send(status.ok() ? FeedPageResponse(page) : ErrorResponse(status));
  }

  ApiRouter* const router_;
  FeedReadSpec spec_;
  const bool follow_retention_;
  const std::chrono::steady_clock::time_point deadline_;
  boost::asio::steady_timer timer_;
  Responder responder_;
  uint64_t watch_ = 0;
  bool registered_ = false;
};

void ApiRouter::ChangeFeed(std::string_view query, Responder responder) {
  Result<FeedParams> params = ParseFeedParams(query);
  if (!params.ok()) return responder.Send(ErrorResponse(params.status()));
  if (params->container && store_->FindContainer(*params->container) == nullptr) {
    return responder.Send(ErrorResponse(
        Status(ErrorCode::kContainerNotFound, "no container named '" + *params->container + "'")));
  }

  FeedReadSpec spec;
  spec.container = params->container;
  spec.limit = params->limit;
  spec.max_bytes = options_.feed_max_page_bytes;
  switch (params->start) {
    case FeedStart::kBeginning:
      spec.from = store_->OldestRetainedLsn();
      break;
    case FeedStart::kNow:
      spec.from = store_->HeadLsn() + 1;
      break;
    case FeedStart::kLsn:
      spec.from = params->from;
      break;
  }
  auto poll = std::make_shared<ChangeFeedPoll>(this, std::move(spec),
                                               params->start == FeedStart::kBeginning, params->wait,
                                               std::move(responder));
  poll->Start();
}

bool ApiRouter::RegisterPoll(ChangeFeedPoll* poll, std::weak_ptr<ChangeFeedPoll> weak) {
  std::lock_guard<std::mutex> lock(polls_mu_);
  if (stopping_) return false;
  polls_.emplace(poll, std::move(weak));
  if (options_.polls_waiting != nullptr) options_.polls_waiting->Set(polls_.size());
  return true;
}

void ApiRouter::UnregisterPoll(ChangeFeedPoll* poll) {
  std::lock_guard<std::mutex> lock(polls_mu_);
  polls_.erase(poll);
  if (options_.polls_waiting != nullptr) options_.polls_waiting->Set(polls_.size());
}

void ApiRouter::OnServerStopping() {
  std::vector<std::shared_ptr<ChangeFeedPoll>> polls;
  {
    std::lock_guard<std::mutex> lock(polls_mu_);
    stopping_ = true;
    for (auto& [_, weak] : polls_) {
      if (auto poll = weak.lock()) polls.push_back(std::move(poll));
    }
  }
  for (auto& poll : polls) poll->Wake();
  queries_.Stop();  // queued queries answer 503; running ones finish

  std::unordered_map<uint64_t, std::function<void(Status)>> waits;
  {
    std::lock_guard<std::mutex> lock(waits_mu_);
    waits.swap(waits_);
  }
  for (auto& [_, finish] : waits) {
    finish(Status(ErrorCode::kUnavailable, "the daemon is shutting down"));
  }
}

void ApiRouter::FeedInfo(Responder responder) {
  boost::json::object kafka;
  boost::json::value published = nullptr;
  if (const Publisher* publisher = options_.publisher) {
    PublisherStatus s = publisher->GetStatus();
    boost::json::object topics;
    for (const auto& [container, topic] : publisher->Topics()) topics[container] = topic;
    published = s.published_lsn;
    kafka = boost::json::object{
        {"bootstrapServers", s.bootstrap},
        {"embedded", options_.embedded_broker},
        {"topics", std::move(topics)},
        {"state", s.state},
        {"connected", s.connected},
        {"lagChanges", s.lag_changes},
        {"lagSeconds", s.lag_seconds},
        {"inflightMessages", s.inflight_messages},
        {"produced", s.produced},
        {"delivered", s.delivered},
        {"deliveryErrors", s.delivery_errors},
        {"duplicatesSkipped", s.duplicates_skipped},
        {"envelopesShrunk", s.envelopes_shrunk},
        {"envelopesUndecodable", s.envelopes_undecodable},
        {"resolvedLsn", s.resolved_lsn},
        {"resolvedMarkers", s.resolved_markers},
        {"heartbeats", s.heartbeats},
        {"lastError",
         s.last_error.empty() ? boost::json::value(nullptr) : boost::json::value(s.last_error)},
    };
  } else {
    kafka = boost::json::object{{"bootstrapServers", nullptr},
                                {"embedded", false},
                                {"topics", boost::json::object()},
                                {"state", "disabled"}};
  }
  boost::json::array consumers;
  for (const ConsumerWatermark& consumer : store_->Consumers()) {
    consumers.push_back(boost::json::object{{"name", consumer.name}, {"ackedLsn", consumer.acked}});
  }
  boost::json::object info{
      {"headLsn", store_->HeadLsn()},         {"oldestRetainedLsn", store_->OldestRetainedLsn()},
      {"publishedLsn", std::move(published)}, {"kafka", std::move(kafka)},
      {"consumers", std::move(consumers)},
  };
  responder.Send(JsonResponse(200, boost::json::serialize(info)));
}

}  // namespace feedd
