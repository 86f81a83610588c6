defmodule Trellis.PortBinary.Checksum do
  @moduledoc false

  # The checksum file the package ships (`checksum-trellis_pg.exs`, written by
  # scripts/release.sh or scripts/publish.sh): an Elixir map from release file
  # name to "sha256:<hex>". It is read as data, never evaluated.

  @file_name "checksum-trellis_pg.exs"

  @doc "The checksum file's name inside the package."
  @spec file_name() :: String.t()
  def file_name, do: @file_name

  @doc "The digests in `path`, by release file name."
  @spec read(Path.t()) :: {:ok, %{String.t() => String.t()}} | {:error, String.t()}
  def read(path) do
    with {:ok, text} <- read_text(path),
         {:ok, {:%{}, _, pairs}} <- Code.string_to_quoted(text),
         true <- Enum.all?(pairs, &digest_pair?/1) do
      {:ok, Map.new(pairs)}
    else
      {:error, reason} when is_binary(reason) -> {:error, reason}
      _ -> {:error, "#{path} is not a map of file names to \"sha256:<hex>\" digests"}
    end
  end

  defp read_text(path) do
    case File.read(path) do
      {:ok, text} -> {:ok, text}
      {:error, reason} -> {:error, "cannot read #{path}: #{:file.format_error(reason)}"}
    end
  end

  defp digest_pair?({name, "sha256:" <> hex}) when is_binary(name),
    do: byte_size(hex) == 64 and hex =~ ~r/\A[0-9a-f]+\z/

  defp digest_pair?(_), do: false

  @doc "The digest of `bytes` as the checksum file writes it."
  @spec digest(iodata()) :: String.t()
  def digest(bytes), do: "sha256:" <> Base.encode16(:crypto.hash(:sha256, bytes), case: :lower)

  @doc """
  Checks `bytes`, which came from `origin` (a path or URL, for the message),
  against the digest recorded for `name`.
  """
  @spec verify(%{String.t() => String.t()}, String.t(), binary(), String.t()) ::
          :ok | {:error, String.t()}
  def verify(digests, name, bytes, origin) do
    actual = digest(bytes)

    case Map.fetch(digests, name) do
      {:ok, ^actual} ->
        :ok

      {:ok, expected} ->
        {:error,
         "checksum mismatch for #{name} (from #{origin}): expected #{expected}, " <>
           "got #{actual}; the file is not the released binary"}

      :error ->
        {:error, "#{@file_name} has no entry for #{name}, so #{origin} cannot be verified"}
    end
  end
end
