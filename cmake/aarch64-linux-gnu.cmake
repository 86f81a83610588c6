# Cross-compiling trellis-port for 64-bit ARM Linux on a Debian x86_64 host
# (scripts/build-port.sh aarch64-linux): Debian's g++-aarch64-linux-gnu, the
# arm64 multiarch packages for the libraries that are compiled code (OpenSSL,
# c-ares; libpq is built from source), and the host's own packages for the
# header-only ones (Boost, msgpack-c, spdlog, fmt), which are the same on
# every CPU.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# The header-only packages' CMake files live under the host's triplet.
foreach(package msgpack:msgpackc-cxx fmt:fmt Boost:Boost-1.74.0)
  string(REPLACE ":" ";" parts ${package})
  list(GET parts 0 name)
  list(GET parts 1 dir)
  if(EXISTS /usr/lib/x86_64-linux-gnu/cmake/${dir})
    set(${name}_DIR /usr/lib/x86_64-linux-gnu/cmake/${dir} CACHE PATH "")
  endif()
endforeach()

# pkg-config and FindOpenSSL would otherwise return the host's x86_64 libraries.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(OPENSSL_SSL_LIBRARY /usr/lib/aarch64-linux-gnu/libssl.a CACHE FILEPATH "")
set(OPENSSL_CRYPTO_LIBRARY /usr/lib/aarch64-linux-gnu/libcrypto.a CACHE FILEPATH "")
