#include "replay/backend.h"

namespace replay {

const char* to_string(Disposition disposition) {
    switch (disposition) {
        case Disposition::Ready:
            return "ready";
        case Disposition::Skipped:
            return "skipped";
        case Disposition::Failed:
            return "failed";
    }
    return "?";
}

}  // namespace replay
