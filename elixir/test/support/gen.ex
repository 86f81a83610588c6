defmodule Trellis.Test.Gen do
  @moduledoc false

  # Random msgpack terms for round-trip properties (no StreamData: the package
  # takes no dependencies). Seeded, so a failure names a seed that repeats it.

  @doc "Runs `fun` on `count` random terms; the seed goes in any failure message."
  def check(count, fun) do
    seed = :erlang.phash2(make_ref())
    :rand.seed(:exsss, {seed, seed + 1, seed + 2})

    for _ <- 1..count do
      term = term(3)

      try do
        fun.(term)
      rescue
        error ->
          reraise ExUnit.AssertionError,
                  [message: "seed #{seed}, term #{inspect(term)}: " <> Exception.message(error)],
                  __STACKTRACE__
      end
    end

    :ok
  end

  @doc "A random decoded-form term, nested at most `depth` containers deep."
  def term(depth) do
    case :rand.uniform(if depth > 0, do: 9, else: 7) do
      1 -> Enum.random([nil, true, false, :nan, :infinity, :neg_infinity])
      2 -> integer()
      3 -> float()
      4 -> bytes()
      5 -> {:bin, bytes()}
      6 -> integer()
      7 -> bytes()
      8 -> for _ <- 1..size(), do: term(depth - 1)
      9 -> Map.new(1..size()//1, fn _ -> {term(0), term(depth - 1)} end)
    end
  end

  defp size, do: Enum.random([0, 1, 2, 15, 16, 17])

  # Edges of every integer form, and random values in between.
  @int_edges [0, 1, 127, 128, 255, 256, 65_535, 65_536, 0xFFFF_FFFF, 0x1_0000_0000] ++
               [0xFFFF_FFFF_FFFF_FFFF, -1, -32, -33, -128, -129, -32_768, -32_769] ++
               [-0x8000_0000, -0x8000_0001, -0x8000_0000_0000_0000]

  defp integer do
    if :rand.uniform(2) == 1,
      do: Enum.random(@int_edges),
      else: :rand.uniform(0x1_0000_0000_0000_0000) - 0x8000_0000_0000_0001
  end

  defp float do
    case :rand.uniform(3) do
      1 -> Enum.random([0.0, -1.5, 1.0e300, 5.0e-324, 0.1])
      _ -> (:rand.uniform() - 0.5) * :math.pow(10, :rand.uniform(40) - 20)
    end
  end

  defp bytes do
    len = Enum.random([0, 1, 31, 32, 255, 256, 300])
    :rand.bytes(len)
  end
end
