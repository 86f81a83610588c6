defmodule Trellis.PortBinary.SourceBuild do
  @moduledoc false

  # Builds trellis-port from the C++ tree with CMake: the repository itself in
  # development, the tree the package carries under native/ otherwise. What is
  # missing (cmake, a C++20 compiler, a library's headers) is named in the
  # error with the package that provides it.

  # CMake's "could not find" subject -> what to install.
  @compiler "a C++20 compiler with coroutines: GCC 12 or newer (clang 14 cannot compile the " <>
              "port's Asio coroutines; newer clang and Apple clang are untested)"

  @libraries [
    {"PostgreSQL",
     "libpq headers (Debian/Ubuntu: libpq-dev; Alpine: libpq-dev; macOS: brew install libpq)"},
    {"Boost",
     "Boost headers (Debian/Ubuntu: libboost-dev; Alpine: boost-dev; macOS: brew install boost)"},
    {"msgpack",
     "msgpack-c++ (Debian/Ubuntu: libmsgpack-cxx-dev; Alpine: msgpack-cxx-dev; macOS: brew install msgpack-cxx)"},
    {"spdlog",
     "spdlog (Debian/Ubuntu: libspdlog-dev; Alpine: spdlog-dev; macOS: brew install spdlog)"},
    {"Catch2", "Catch2 v2 (Debian/Ubuntu: catch2), only for the test build"},
    {"Threads", "POSIX threads (a C++ toolchain)"}
  ]

  @doc """
  Configures `source` into `build_dir` (unless it is configured already) and
  builds `targets`; returns `build_dir`. `cmake_args` are added to a fresh
  configure.
  """
  @spec build(Path.t(), Path.t(), [String.t()], [String.t()]) ::
          {:ok, Path.t()} | {:error, String.t()}
  def build(source, build_dir, targets, cmake_args) do
    with {:ok, cmake} <- find_tool("cmake", "cmake 3.25 or newer"),
         :ok <- check_compiler(),
         :ok <- configure(cmake, source, build_dir, cmake_args),
         :ok <- run_build(cmake, build_dir, targets) do
      {:ok, build_dir}
    end
  end

  defp find_tool(name, what) do
    case System.find_executable(name) do
      nil -> {:error, "building trellis-port from source needs #{what}: `#{name}` is not on PATH"}
      path -> {:ok, path}
    end
  end

  defp check_compiler do
    candidates = Enum.reject([System.get_env("CXX"), "c++", "g++", "clang++"], &is_nil/1)

    if Enum.any?(candidates, &System.find_executable/1),
      do: :ok,
      else:
        {:error,
         "building trellis-port from source needs #{@compiler}: none of " <>
           "#{Enum.join(candidates, ", ")} is on PATH"}
  end

  defp configure(cmake, source, build_dir, cmake_args) do
    if File.exists?(Path.join(build_dir, "CMakeCache.txt")) do
      :ok
    else
      generator = if System.find_executable("ninja"), do: ["-G", "Ninja"], else: []
      args = ["-S", source, "-B", build_dir | generator] ++ cmake_args

      case System.cmd(cmake, args, stderr_to_stdout: true) do
        {_, 0} ->
          :ok

        {output, _} ->
          File.rm(Path.join(build_dir, "CMakeCache.txt"))
          {:error, configure_failure(output)}
      end
    end
  end

  defp configure_failure(output) do
    missing = for {subject, fix} <- @libraries, output =~ ~r/find.{0,40}#{subject}/i, do: fix

    compiler? =
      output =~ ~r/CXX_STANDARD.*20|C\+\+20|No CMAKE_CXX_COMPILER|is not able to compile/

    missing = if compiler?, do: [@compiler | missing], else: missing

    needs =
      if missing == [],
        do: "",
        else: "it needs " <> Enum.join(missing, "; ") <> ". "

    "configuring trellis-port with CMake failed: #{needs}CMake said:\n" <> tail(output, 30)
  end

  defp run_build(cmake, build_dir, targets) do
    jobs = to_string(System.schedulers_online())
    args = ["--build", build_dir, "--parallel", jobs, "--target" | targets]

    case System.cmd(cmake, args, stderr_to_stdout: true) do
      {_, 0} -> :ok
      {output, _} -> {:error, "building trellis-port failed:\n" <> tail(output, 40)}
    end
  end

  defp tail(output, lines) do
    output |> String.split("\n") |> Enum.take(-lines) |> Enum.join("\n")
  end
end
