defmodule Trellis.Protocol.FrameTest do
  use ExUnit.Case, async: true

  alias Trellis.Protocol.Frame

  @max 16 * 1024 * 1024

  defp frame(body), do: IO.iodata_to_binary(Frame.encode(body))

  test "encode prefixes the body with its big-endian length" do
    assert frame("abc") == <<0, 0, 0, 3, "abc">>
    assert frame("") == <<0, 0, 0, 0>>
    assert frame(:binary.copy(<<1>>, 258)) |> binary_part(0, 4) == <<0, 0, 1, 2>>
  end

  test "encode refuses a body over 16 MiB" do
    assert_raise ArgumentError, ~r/over the 16777216 limit/, fn ->
      Frame.encode(:binary.copy(<<0>>, @max + 1))
    end
  end

  test "split returns every complete frame and keeps the rest buffered" do
    stream = frame("one") <> frame("") <> frame("three") <> <<0, 0, 0, 9, "par">>
    assert Frame.split(stream) == {:ok, ["one", "", "three"], <<0, 0, 0, 9, "par">>}
  end

  test "a truncated header needs more bytes" do
    assert Frame.next(<<0, 0>>) == :more
    assert Frame.split(<<0, 0>>) == {:ok, [], <<0, 0>>}
  end

  test "a body of exactly 16 MiB is accepted and one byte more loses framing" do
    assert Frame.next(<<@max::32, "partial">>) == :more
    assert Frame.next(<<@max + 1::32>>) == {:error, :oversize_frame}

    assert Frame.split(frame("ok") <> <<0xFFFFFFFF::32>> <> frame("lost")) ==
             {:error, :oversize_frame, ["ok"]}
  end

  test "the stream split at every byte boundary gives the same frames" do
    bodies = ["", "a", :binary.copy("xy", 130), <<0x94, 0, 1, 0xA4, "ping", 0x80>>]
    stream = Enum.map_join(bodies, &frame/1)

    for cut <- 0..byte_size(stream) do
      <<first::binary-size(cut), second::binary>> = stream
      {:ok, frames1, rest} = Frame.split(first)
      assert {:ok, frames2, ""} = Frame.split(rest <> second)
      assert frames1 ++ frames2 == bodies, "cut at byte #{cut}"
    end
  end

  test "feeding one byte at a time yields each frame once it is complete" do
    bodies = ["first", "", "third"]
    stream = Enum.map_join(bodies, &frame/1)

    {seen, rest} =
      for <<byte <- stream>>, reduce: {[], ""} do
        {seen, buffer} ->
          {:ok, frames, rest} = Frame.split(buffer <> <<byte>>)
          {seen ++ frames, rest}
      end

    assert {seen, rest} == {bodies, ""}
  end
end
