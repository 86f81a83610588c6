defmodule Trellis.Test.Conformance do
  @moduledoc false

  # Reads spec/conformance/*.json (format: spec/conformance/README or the
  # runner's header) and turns their typed JSON into the terms the Elixir codec
  # decodes to, and into terms that encode in the vector's exact byte order.

  alias Trellis.Test.JSON

  @default_dir Path.expand("../../../spec/conformance", __DIR__)

  @doc "spec/conformance, or $TRELLIS_CONFORMANCE_DIR when set (for drafting vectors)."
  def dir, do: System.get_env("TRELLIS_CONFORMANCE_DIR", @default_dir)

  @doc "Every vector file as {basename, [case]}, sorted by name."
  def files do
    dir()
    |> Path.join("*.json")
    |> Path.wildcard()
    |> Enum.sort()
    |> Enum.map(fn path -> {Path.basename(path), cases(path)} end)
  end

  defp cases(path) do
    case JSON.decode!(File.read!(path)) do
      %{"cases" => cases} when is_list(cases) -> cases
      _other -> raise ArgumentError, "#{path}: expected an object with a \"cases\" list"
    end
  end

  def bytes(hex), do: Base.decode16!(hex, case: :mixed)

  @doc "The term the decoder gives for a TYPED value (maps: last pair wins)."
  def term(%{"nil" => nil}), do: nil
  def term(%{"bool" => b}) when is_boolean(b), do: b
  def term(%{"int" => s}) when is_binary(s), do: String.to_integer(s)
  def term(%{"float" => "nan"}), do: :nan
  def term(%{"float" => "inf"}), do: :infinity
  def term(%{"float" => "-inf"}), do: :neg_infinity
  def term(%{"float" => f}) when is_number(f), do: f / 1
  def term(%{"str" => s}) when is_binary(s), do: s
  def term(%{"bin" => hex}), do: {:bin, bytes(hex)}
  def term(%{"array" => items}), do: Enum.map(items, &term/1)
  def term(%{"map" => pairs}), do: Map.new(pairs, fn [k, v] -> {term(k), term(v)} end)
  def term(other), do: raise(ArgumentError, "not a typed value: #{inspect(other)}")

  @doc "A term that encodes to the TYPED value's bytes, map pairs in order."
  def encodable(%{"bin" => hex}), do: {:bin, bytes(hex)}
  def encodable(%{"array" => items}), do: Enum.map(items, &encodable/1)

  def encodable(%{"map" => pairs}),
    do: {:map, Enum.map(pairs, fn [k, v] -> {encodable(k), encodable(v)} end)}

  def encodable(typed), do: term(typed)

  @doc "The decoded message a MSG object stands for."
  def message(msg, mode \\ :term)

  def message(%{"request" => r}, mode) do
    timeout = if t = r["timeout_ms"], do: String.to_integer(t)
    {:request, id(r), r["op"], typed(r["args"], mode), timeout}
  end

  def message(%{"reply" => %{"ok" => value} = r}, mode),
    do: {:reply, id(r), {:ok, typed(value, mode)}}

  def message(%{"reply" => %{"error" => e} = r}, _mode) do
    error = %{
      code: e["code"],
      message: e["message"],
      sqlstate: e["sqlstate"],
      detail: e["detail"],
      hint: e["hint"]
    }

    {:reply, id(r), {:error, error}}
  end

  def message(%{"cancel" => c}, _mode), do: {:cancel, id(c)}

  def message(%{"event" => e}, mode), do: {:event, e["kind"], typed(e["payload"], mode)}

  defp typed(value, :term), do: term(value)
  defp typed(value, :encodable), do: encodable(value)

  defp id(%{"call_id" => id}), do: String.to_integer(id)
end
