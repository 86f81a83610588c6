#include "trellis/engine_metrics.h"

namespace trellis {

EngineMetrics& GlobalEngineMetrics() {
  static EngineMetrics metrics;
  return metrics;
}

}  // namespace trellis
