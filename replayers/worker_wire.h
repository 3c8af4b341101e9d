// The worker process's wire format (internal to replayers/): framed messages over a socket, and
// exact binary encodings of what crosses it (recipes, prepared work, timed activities, the
// environment). Binary, not recipe JSON: a recipe must reach the worker bit for bit, doubles
// and storage offsets included, or the replay in a worker would differ from one in-process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "replay/backend.h"

namespace replay::detail {

enum class Command : std::uint8_t {
    // parent -> worker
    Prepare = 1,  // recipe -> reply Prepared
    Streams,      // count
    Issue,        // handle, stream, tag
    Wait,         // waiter, producer
    Flush,
    Warm,  // handle, stream, tag
    Sync,  // -> reply Synced
    Quit,
    SetPhase,        // phase
    FirstUses,       // -> reply Lines
    CaptureBlocker,  // handle, stream -> reply Lines (none: it can be captured)
    BeginCapture,    // home stream, all streams
    EndCapture,      // -> reply Captured
    LaunchGraph,     // graph
    NameIssue,       // the NVTX range of the next Issue
    EvictCode,       // Backend::evict_instruction_caches
    ClockStart,      // stream: Backend::start_device_clock
    Hold,            // stream, interval: Backend::hold_after
    // worker -> parent
    Ready,        // environment
    Unavailable,  // why the backend cannot run here
    Prepared,     // disposition, reason, handle
    Synced,       // issue failures (handle, reason), timed activities
    Fault,        // why the worker's device context is gone; the worker exits after it
    Lines,        // count, strings
    Captured,     // graph (0: none), why
};

// A message that does not decode: the other side is not the replay that started it.
class WireError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class Encoder {
  public:
    explicit Encoder(Command command);
    Encoder& u8(std::uint8_t v);
    Encoder& u32(std::uint32_t v);
    Encoder& i64(std::int64_t v);
    Encoder& f64(double v);
    Encoder& str(std::string_view v);
    Encoder& i64s(const std::vector<std::int64_t>& v);
    // The framed message: u32 length of what follows, the command byte, the payload.
    std::string take();

  private:
    std::string bytes_;
};

class Decoder {
  public:
    // `message`: one frame without its length (command byte first).
    explicit Decoder(std::string_view message);
    Command command() const { return command_; }
    std::uint8_t u8();
    std::uint32_t u32();
    std::int64_t i64();
    double f64();
    std::string str();
    std::vector<std::int64_t> i64s();
    // The length of a list that follows; no more than the bytes left (each item takes one).
    std::uint32_t count();

  private:
    const char* take(std::size_t n);
    std::string_view rest_;
    Command command_;
};

// Bytes received and the whole frames in them. Frames are consumed by moving an offset, and the
// consumed bytes dropped only once they are most of the buffer: erasing each frame from the
// front would move the whole buffer per frame (2 us per issue in a batch of thousands).
class FrameBuffer {
  public:
    void append(const char* data, std::size_t n);
    // The next whole frame without its length (valid until the next append), or an empty view
    // when none has arrived whole. Throws WireError for a length no frame has.
    std::string_view next();

  private:
    std::string bytes_;
    std::size_t start_ = 0;  // first byte not consumed
};

void encode(Encoder& e, const Recipe& recipe);
Recipe decode_recipe(Decoder& d);
void encode(Encoder& e, const Environment& env);
Environment decode_environment(Decoder& d);
void encode(Encoder& e, const TimedActivity& activity);
TimedActivity decode_activity(Decoder& d);

// Bytes of the length prefix of a frame.
constexpr std::size_t kFrameHeader = 4;
// Frames larger than this are a broken peer, not a message (recipes are a few KiB).
constexpr std::uint32_t kMaxFrame = 256u << 20;

}  // namespace replay::detail
