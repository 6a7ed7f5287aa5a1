import { useRef } from 'preact/hooks';

/**
 * Loads of one view overlap: a folder, filter, page or mailbox switch while the previous load, or
 * a live event's refresh, is still in flight. Each load calls the returned function when it starts
 * and gets a check; only the newest load's answer or error may land, or a slow answer for the old
 * view fills the new one (nothing corrects it until the next load).
 */
export function useNewestLoad(): () => () => boolean {
  const newest = useRef(0);
  return () => {
    const ticket = ++newest.current;
    return () => ticket === newest.current;
  };
}
