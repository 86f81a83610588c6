defmodule Trellis.PortBinary.Download do
  @moduledoc false

  # Fetches a release binary with OTP's :httpc, so the package needs no HTTP
  # dependency. HTTPS verifies the server's certificate against the system's
  # CA store (:public_key.cacerts_get/0) or a CA file the user names; plain
  # http:// is accepted for mirrors, because the checksum the package ships,
  # not the transport, vouches for the bytes.

  @timeout_ms 120_000

  @doc """
  The body at `url`. `cacertfile` (a PEM path) replaces the system CA store
  for HTTPS, for private mirrors with their own CA.
  """
  @spec fetch(String.t(), Path.t() | nil) :: {:ok, binary()} | {:error, String.t()}
  def fetch(url, cacertfile \\ nil) do
    with :ok <- start_apps(),
         {:ok, options} <- http_options(url, cacertfile) do
      request = {String.to_charlist(url), [{~c"user-agent", ~c"trellis_pg"}]}

      case :httpc.request(:get, request, options, body_format: :binary) do
        {:ok, {{_, 200, _}, _headers, body}} ->
          {:ok, body}

        {:ok, {{_, status, reason}, _headers, _body}} ->
          {:error, "downloading #{url} failed: HTTP #{status} #{reason}"}

        {:error, reason} ->
          {:error, "downloading #{url} failed: #{inspect(reason)}"}
      end
    end
  end

  defp start_apps do
    with {:ok, _} <- Application.ensure_all_started(:inets),
         {:ok, _} <- Application.ensure_all_started(:ssl) do
      :ok
    else
      {:error, reason} -> {:error, "cannot start :inets/:ssl to download: #{inspect(reason)}"}
    end
  end

  defp http_options(url, cacertfile) do
    case URI.parse(url) do
      %URI{scheme: "http"} ->
        {:ok, [timeout: @timeout_ms]}

      %URI{scheme: "https", host: host} ->
        with {:ok, cacerts} <- ca_option(cacertfile) do
          ssl = [
            verify: :verify_peer,
            server_name_indication: String.to_charlist(host),
            customize_hostname_check: [
              match_fun: :public_key.pkix_verify_hostname_match_fun(:https)
            ],
            depth: 4
          ]

          {:ok, [timeout: @timeout_ms, ssl: [cacerts | ssl]]}
        end

      _ ->
        {:error, "#{url} is not an http:// or https:// URL"}
    end
  end

  defp ca_option(nil) do
    {:ok, {:cacerts, :public_key.cacerts_get()}}
  rescue
    error ->
      {:error, "no system CA certificates to verify HTTPS with: #{Exception.message(error)}"}
  end

  defp ca_option(path) do
    if File.regular?(path),
      do: {:ok, {:cacertfile, String.to_charlist(path)}},
      else: {:error, "the CA file #{path} does not exist"}
  end
end
