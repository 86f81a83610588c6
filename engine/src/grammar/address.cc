#include "grammar/address.h"

namespace trellis::grammar {

std::vector<TransformAddress> AddressReadings(const std::vector<std::string>& parts) {
  switch (parts.size()) {
    case 1:
      return {TransformAddress{QualifiedName{std::nullopt, parts[0]}, std::nullopt}};
    case 2:
      return {TransformAddress{QualifiedName{std::nullopt, parts[0]}, parts[1]},
              TransformAddress{QualifiedName{parts[0], parts[1]}, std::nullopt}};
    case 3:
      return {TransformAddress{QualifiedName{parts[0], parts[1]}, parts[2]}};
    default:
      return {};
  }
}

}  // namespace trellis::grammar
