defmodule Trellis.CaptureFailure do
  @moduledoc """
  Capture of a table a transform reads has failed, as `Trellis.status/2`
  reports it in `:capture_failure` (`nil` while capture is whole).

    * `:kind` - one of
      * `:disruption`: the table's Trellis capture triggers were
        disabled, dropped or changed outside Trellis (an `ALTER TABLE ...
        DISABLE TRIGGER ALL`, a `pg_restore --disable-triggers`), so writes
        made since may be missing from the target; the fix is to
        `RESUME TRANSFORM` the transform, which reinstalls capture and
        rebuilds the target
      * `:slot_lost` (capture by logical decoding): the replication slot was
        dropped outside Trellis, invalidated by the server
        (`max_slot_wal_keep_size`) or lost its publication, so the writes it
        held are gone; the elected staging worker makes a new slot and
        rebuilds every transform by itself (within about a second while a
        handle with `staging: true` is connected)
      * `:publication_altered` (logical): a table the transform reads was
        removed from Trellis's publication by hand; the staging worker
        publishes it again and rebuilds its readers by itself
      * `:slot_behind` (logical): staging has not read the slot for 30 s
        while there is WAL to read, or the slot holds more than 1 GiB of
        WAL (or the server will invalidate it next): nothing is lost yet;
        keep a handle with `staging: true` connected and look at its log

      and `:unknown` for a kind newer than this package
    * `:since` - when it was found, a `DateTime` (`nil` for a disruption
      found before this package recorded the time, and for `:slot_lost` and
      `:publication_altered`; for `:slot_behind`, when the slot was last
      read)
    * `:message` - what was found, and the fix

  Only `:disruption` pauses the transform. A disrupted transform is paused: with `paused_kind: :disruption` when it
  was running, while one an operator had already paused keeps
  `paused_kind: :operator` and reports the disruption here, so its RESUME
  still rebuilds. See `Trellis.TestSupport.resume_capture_disruptions/2`.
  """

  defstruct [:kind, :since, :message]

  @type t :: %__MODULE__{
          kind: :disruption | :slot_lost | :publication_altered | :slot_behind | :unknown,
          since: DateTime.t() | nil,
          message: String.t()
        }

  @kinds %{
    "disruption" => :disruption,
    "slot_lost" => :slot_lost,
    "publication_altered" => :publication_altered,
    "slot_behind" => :slot_behind
  }

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
