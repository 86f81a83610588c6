defmodule Trellis.SelfCheckJob do
  @moduledoc """
  A self-check of one target, as `Trellis.self_check/3` starts it and
  `Trellis.self_check_job/2` reads it back.

    * `:id` - the job's id, for `Trellis.self_check_job/2`
    * `:target` - the transform's name
    * `:mode` - `:full` or `:sample`; `:sample_size` the sample's bound
    * `:state` - `:queued` (no drain worker has taken it yet: with none in
      the fleet it stays queued), `:running` (`:rows_compared` grows),
      `:done` (`:report` holds a `Trellis.SelfCheckReport`), `:failed` or
      `:cancelled` (`:error` holds a `Trellis.Error` saying why). A job is
      `:cancelled` by a `PAUSE TRANSFORM` of its target while it is queued
      or running (a check of a paused target could only fail); there is no
      other cancel. It is `:failed` when a drain worker cannot run it: the
      transform is paused when the worker takes the job, its definition no
      longer binds to its source, or a schema change of its source paused
      it during the check. Either way the next `Trellis.self_check/3`
      replaces it, once the transform is resumed.
    * `:rows_compared` - keys compared so far

  A job whose drain worker dies (its port killed, its node gone) is taken
  over by another drain worker once the dead one's heartbeat is 10 seconds
  old, and starts again from the first key: it never stays `:running`
  without a worker.
  """

  alias Trellis.Error

  defstruct [:id, :target, :mode, :sample_size, :state, :report, :error, rows_compared: 0]

  @type state :: :queued | :running | :done | :failed | :cancelled

  @type t :: %__MODULE__{
          id: pos_integer,
          target: String.t(),
          mode: :full | :sample,
          sample_size: pos_integer | nil,
          state: state | :unknown,
          rows_compared: non_neg_integer,
          report: Trellis.SelfCheckReport.t() | nil,
          error: Error.t() | nil
        }

  @states %{
    "queued" => :queued,
    "running" => :running,
    "done" => :done,
    "failed" => :failed,
    "cancelled" => :cancelled
  }
  @modes %{"full" => :full, "sample" => :sample}

  @doc false
  @spec from_wire(map | nil) :: t | nil
  def from_wire(nil), do: nil

  def from_wire(m) do
    %__MODULE__{
      id: m["id"],
      target: m["target"],
      mode: Map.get(@modes, m["mode"], :full),
      sample_size: m["sample_size"],
      state: Map.get(@states, m["state"], :unknown),
      rows_compared: m["rows_compared"] || 0,
      report: Trellis.SelfCheckReport.from_wire(m["report"]),
      error: m["error"] && Error.new(:database, m["error"])
    }
  end

  @doc false
  # The options of Trellis.self_check/3 as wire arguments, checked once by
  # the rule of Trellis.Options: a wrong type or an unknown option raises
  # ArgumentError, a bad value is a :validation error naming the option.
  @spec wire_options(term) :: {:ok, map} | {:error, Error.t()}
  def wire_options(opts) do
    unless Keyword.keyword?(opts) do
      raise ArgumentError,
            "Trellis.self_check/3 expects a keyword list of options, got: #{inspect(opts)}"
    end

    opts = Keyword.validate!(opts, mode: :full, sample_size: nil)

    case {opts[:mode], opts[:sample_size]} do
      {:full, nil} ->
        {:ok, %{"mode" => "full"}}

      {:full, _size} ->
        {:error,
         Error.new(:validation, "option :sample_size applies to mode: :sample only, drop it")}

      {:sample, nil} ->
        {:error,
         Error.new(:validation, "mode: :sample needs option :sample_size (the keys to check)")}

      {:sample, size} when is_integer(size) and size in 1..1_000_000 ->
        {:ok, %{"mode" => "sample", "sample_size" => size}}

      {:sample, size} when is_integer(size) ->
        {:error,
         Error.new(
           :validation,
           "option :sample_size must be in 1..1000000, got: #{size}; for more use mode: :full"
         )}

      {:sample, size} ->
        raise ArgumentError, "option :sample_size must be an integer, got: #{inspect(size)}"

      {mode, _} ->
        raise ArgumentError, "option :mode must be :full or :sample, got: #{inspect(mode)}"
    end
  end
end
