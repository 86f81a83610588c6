defmodule Trellis.CaptureFailure do
  @moduledoc """
  Capture of a table a transform reads has failed, as `Trellis.status/2`
  reports it in `:capture_failure` (`nil` while capture is whole).

    * `:kind` - `:disruption`: the table's Trellis capture triggers were
      disabled, dropped or changed outside Trellis (an `ALTER TABLE ...
      DISABLE TRIGGER ALL`, a `pg_restore --disable-triggers`), so writes
      made since may be missing from the target; `:unknown` for a kind
      newer than this package
    * `:since` - when it was found, a `DateTime` (`nil` for a disruption
      found before this package recorded the time)
    * `:message` - what was found, and the fix: `RESUME TRANSFORM` the
      transform, which reinstalls capture and rebuilds the target

  A disrupted transform is paused: with `paused_kind: :disruption` when it
  was running, while one an operator had already paused keeps
  `paused_kind: :operator` and reports the disruption here, so its RESUME
  still rebuilds. See `Trellis.TestSupport.resume_capture_disruptions/2`.
  """

  defstruct [:kind, :since, :message]

  @type t :: %__MODULE__{
          kind: :disruption | :unknown,
          since: DateTime.t() | nil,
          message: String.t()
        }

  @kinds %{"disruption" => :disruption}

  @doc false
  @spec from_wire(map | nil) :: t | nil
  def from_wire(nil), do: nil

  def from_wire(m) do
    %__MODULE__{
      kind: Map.get(@kinds, m["kind"], :unknown),
      since: Trellis.Enums.time(m["since"]),
      message: m["message"]
    }
  end
end
